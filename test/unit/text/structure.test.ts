import { expect } from 'chai';
import { DocumentBuilder } from '../../../src/extract/document-builder.js';
import { segmentDocument } from '../../../src/text/segment.js';
import { buildSections, SectionOutline, sectionAt, topLevelIndex } from '../../../src/text/structure.js';
import { markdownDocument } from './markdown-doc.js';

describe('buildSections', () => {
  const md = [
    '# Handbuch Ausbildung',
    'Einleitender Text unter dem Titel.',
    '## Kapitel 1',
    'Text in Kapitel 1.',
    '## Kapitel 2',
    '### Auftragsklärung',
    'Erst klären, dann handeln.',
    '#### Checkliste',
    'Punkte abhaken.',
    '### Durchführung',
    'Jetzt geht es los.',
  ].join('\n\n');

  it('builds heading paths without the document title', () => {
    const sections = buildSections(markdownDocument(md));
    expect(sections.map((s) => s.headingPath)).to.deep.equal([
      ['Handbuch Ausbildung'],
      ['Kapitel 1'],
      ['Kapitel 2'],
      ['Kapitel 2', 'Auftragsklärung'],
      ['Kapitel 2', 'Auftragsklärung', 'Checkliste'],
      ['Kapitel 2', 'Durchführung'],
    ]);
    expect(sections.map((s) => s.level)).to.deep.equal([0, 2, 2, 3, 4, 3]);
    expect(sections.map((s) => s.parentIndex)).to.deep.equal([null, 0, 0, 2, 3, 2]);
  });

  it('cuts a heading of thousands of characters to 1,000, marked', () => {
    const long = 'Überlange Überschrift '.repeat(300).trim();
    const sections = buildSections(markdownDocument(`# Titel\n\n## ${long}\n\nText.\n`));
    const section = sections.find((s) => s.level === 2)!;
    expect(section.heading).to.have.length(1000);
    expect(section.heading.endsWith('…')).to.equal(true);
    expect(section.headingPath.at(-1)).to.equal(section.heading);
  });

  it('gives each section the span of its own text, up to the next heading', () => {
    const doc = markdownDocument(md);
    const sections = buildSections(doc);
    const k1 = sections[1];
    expect(doc.text.slice(k1?.start, k1?.end).trim()).to.equal('Kapitel 1\n\nText in Kapitel 1.');
    expect(sections.at(-1)?.end).to.equal(doc.text.length);
  });

  it('makes text before the first heading a preamble with an empty path', () => {
    const doc = markdownDocument('Vorwort ohne Überschrift.\n\n# Eins\n\nText.\n\n# Zwei\n\nMehr.');
    const sections = buildSections(doc);
    expect(sections[0]).to.include({ heading: '', level: 0, start: 0 });
    expect(sections[0]?.headingPath).to.deep.equal([]);
    // two level-1 headings: neither is the title
    expect(sections.slice(1).map((s) => s.headingPath)).to.deep.equal([['Eins'], ['Zwei']]);
  });

  it('treats title blocks as level 0 and records page ranges', () => {
    const b = new DocumentBuilder('pptx');
    b.startPage(1);
    b.add('title', 'Folie Eins');
    b.add('paragraph', 'Inhalt eins.');
    b.startPage(2);
    b.add('paragraph', 'Fortsetzung auf Seite zwei.');
    b.startPage(3);
    b.add('title', 'Folie Drei');
    b.add('heading', 'Unterpunkt', 2);
    b.add('paragraph', 'Text.');
    const doc = b.build();
    const sections = buildSections(doc);
    expect(sections.map((s) => [s.heading, s.level, s.pageStart, s.pageEnd])).to.deep.equal([
      ['Folie Eins', 0, 1, 2],
      ['Folie Drei', 0, 3, 3],
      ['Unterpunkt', 2, 3, 3],
    ]);
    expect(sections[2]?.headingPath).to.deep.equal(['Unterpunkt']);
    expect(topLevelIndex(sections, 2)).to.equal(2);
  });

  it('finds the section of an offset and the top-level ancestor', () => {
    const doc = markdownDocument(md);
    const sections = buildSections(doc);
    const at = doc.text.indexOf('Punkte abhaken');
    expect(sections[sectionAt(sections, at)]?.heading).to.equal('Checkliste');
    expect(sections[topLevelIndex(sections, sectionAt(sections, at))]?.heading).to.equal('Kapitel 2');
  });
});

describe('SectionOutline', () => {
  it('holds the tree of buildSections, from the document or from its sections', () => {
    const md = [
      'Vorwort.',
      '# Teil A',
      '## Kapitel 1',
      '#### Tief  verschachtelt',
      'Text.',
      '## Kapitel 2',
      '# Teil B',
      '### Ohne Kapitel',
    ].join('\n\n');
    const doc = markdownDocument(md);
    const sections = buildSections(doc);
    for (const outline of [SectionOutline.of(doc), SectionOutline.fromSections(sections)]) {
      expect(outline.count).to.equal(sections.length);
      const top = outline.topLevels();
      sections.forEach((s, k) => {
        expect(outline.start[k]).to.equal(s.start);
        expect(outline.level[k]).to.equal(s.level);
        expect(outline.parent[k]).to.equal(s.parentIndex ?? -1);
        expect(outline.heading(k)).to.equal(s.heading);
        expect(outline.headingPath(k)).to.deep.equal(s.headingPath);
        expect(top[k]).to.equal(topLevelIndex(sections, k));
        expect(outline.sectionAt(s.start)).to.equal(k);
      });
    }
    expect(sections[3]?.headingPath).to.deep.equal(['Teil A', 'Kapitel 1', 'Tief verschachtelt']);
  });
});

describe('segmentDocument', () => {
  it('assigns blocks to sections, splits prose into sentences and keeps tables and code whole', () => {
    const md = [
      '# Titel',
      '## Teil A',
      'Erster Satz. Zweiter Satz mit z. B. einer Abkürzung.',
      '- ein kurzer Punkt. Mit zwei Sätzen.',
      '| a. | b. |\n|---|---|\n| 1. Zeile. | 2. Zeile. |',
      '```\nconst x = 1. ; y. z\n```',
    ].join('\n\n');
    const doc = markdownDocument(md);
    const sections = buildSections(doc);
    const segments = segmentDocument(doc, sections);
    expect(segments.map((s) => s.type)).to.deep.equal([
      'heading',
      'heading',
      'paragraph',
      'list_item',
      'table',
      'code',
    ]);
    expect(segments.map((s) => s.sectionIndex)).to.deep.equal([0, 1, 1, 1, 1, 1]);
    const para = segments[2];
    expect(para?.sentences.map((s) => doc.text.slice(s.start, s.end))).to.deep.equal([
      'Erster Satz.',
      'Zweiter Satz mit z. B. einer Abkürzung.',
    ]);
    expect(segments[3]?.sentences).to.have.length(1);
    expect(segments[4]?.sentences).to.have.length(1);
    expect(segments[5]?.sentences).to.have.length(1);
  });

  it('falls back to blank-line paragraphs for text without blocks', () => {
    const text = 'Absatz eins. Noch ein Satz.\n\nAbsatz zwei.';
    const segments = segmentDocument({ text, blocks: [], pages: [] }, []);
    expect(segments.map((s) => text.slice(s.start, s.end))).to.deep.equal([
      'Absatz eins. Noch ein Satz.',
      'Absatz zwei.',
    ]);
    expect(segments[0]?.sentences).to.have.length(2);
  });
});
