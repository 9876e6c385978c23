import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { strFromU8, unzipSync } from 'fflate';
import { type CpeError, ErrorCodes } from '../../../src/errors.js';
import { chartTexts, paragraphText } from '../../../src/extract/drawingml-text.js';
import { extractPptx } from '../../../src/extract/pptx.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';
import { parseXml } from '../../../src/extract/xml.js';
import { editPackage, extractOptions, makePptx } from './office-fixtures.js';

const blocksOf = (doc: ExtractedDocument) =>
  doc.blocks.map((b) => ({
    type: b.type,
    text: doc.text.slice(b.start, b.end),
    page: b.page,
    level: b.level,
  }));

const NS =
  'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"';
const textShape = (text: string, ph = '') =>
  `<p:sp><p:nvSpPr><p:cNvPr id="9" name="t"/><p:cNvSpPr/><p:nvPr>${ph}</p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:p><a:r><a:t>${text}</a:t></a:r></a:p></p:txBody></p:sp>`;
const group = (inner: string) =>
  `<p:grpSp><p:nvGrpSpPr><p:cNvPr id="8" name="g"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>${inner}</p:grpSp>`;
const slideXml = (shapes: string, prolog = '') =>
  `<?xml version="1.0" encoding="UTF-8"?>${prolog}<p:sld ${NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>${shapes}</p:spTree></p:cSld></p:sld>`;

async function extractError(bytes: Uint8Array, code: string, options = extractOptions): Promise<CpeError> {
  try {
    await extractPptx(bytes, 'deck.pptx', options);
  } catch (error) {
    expect((error as CpeError).code, (error as Error).message).to.equal(code);
    expect((error as Error).message).to.contain('deck.pptx');
    return error as CpeError;
  }
  return expect.fail(`expected ${code}`);
}

describe('extract/pptx', () => {
  let pptx: Uint8Array;
  let doc: ExtractedDocument;
  before(async () => {
    pptx = await makePptx(3);
    doc = await extractPptx(pptx, 'schulung.pptx', extractOptions);
  });

  it('makes one page per slide with the slide title as the first, level-1 heading', () => {
    expect(doc.pages.map((p) => p.number)).to.deep.equal([1, 2, 3]);
    expect(doc.pages.map((p) => p.metadata.slideTitle)).to.deep.equal([
      'Einführung in die Qualitätssicherung',
      'Begriffe',
      'Folie 3',
    ]);
    const first = blocksOf(doc).filter((b) => b.page === 1);
    // the title shape comes after a free text box in the slide XML, yet leads the page
    expect(first[0]).to.deep.equal({
      type: 'heading',
      text: 'Einführung in die Qualitätssicherung',
      page: 1,
      level: 1,
    });
    expect(first.map((b) => b.text)).to.include('Freier Text vor dem Titel');
  });

  it('keeps bullets with their indent level, tables and speaker notes', () => {
    const blocks = blocksOf(doc);
    expect(blocks.filter((b) => b.type === 'list_item').map((b) => [b.text, b.level])).to.deep.equal([
      ['Erster Punkt', 0],
      ['Unterpunkt', 1],
    ]);
    expect(blocks.filter((b) => b.type === 'table')).to.deep.equal([
      { type: 'table', text: 'Begriff | Bedeutung\nAudit | Prüfung', page: 2, level: undefined },
    ]);
    expect(blocks.filter((b) => b.type === 'notes')).to.deep.equal([
      { type: 'notes', text: 'Sprechernotiz: Zeit für Fragen einplanen', page: 1, level: undefined },
    ]);
    expect(doc.pages.map((p) => [p.metadata.hasNotes, p.metadata.tables])).to.deep.equal([
      [true, 0],
      [false, 1],
      [false, 0],
    ]);
  });

  it('takes the document title from the first slide when core.xml has none worth keeping', async () => {
    const edited = editPackage(pptx, {
      'docProps/core.xml': (old) =>
        old.replace(/<dc:title>[^<]*<\/dc:title>/, '<dc:title>PowerPoint Presentation</dc:title>'),
    });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.metadata.title).to.equal('Einführung in die Qualitätssicherung');
    expect(result.metadata.slideCount).to.equal(3);
  });

  it('follows the slide order of presentation.xml, not the file names', async () => {
    const files = unzipSync(pptx);
    const presentation = strFromU8(files['ppt/presentation.xml']!);
    const ids = presentation.match(/<p:sldId [^>]*\/>/g)!;
    expect(ids).to.have.length(3);
    const reversed = presentation.replace(ids.join(''), [...ids].reverse().join(''));
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/presentation.xml': reversed }),
      'deck.pptx',
      extractOptions,
    );
    expect(result.pages.map((p) => p.metadata.slideTitle)).to.deep.equal([
      'Folie 3',
      'Begriffe',
      'Einführung in die Qualitätssicherung',
    ]);
  });

  it('reads text inside nested group shapes and leaves out slide numbers', async () => {
    const shapes =
      textShape('Oben') +
      group(textShape('In Gruppe') + group(textShape('Tief verschachtelt'))) +
      textShape('7', '<p:ph type="sldNum"/>');
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/slides/slide3.xml': slideXml(shapes) }),
      'deck.pptx',
      extractOptions,
    );
    const third = blocksOf(result).filter((b) => b.page === 3);
    expect(third.map((b) => b.text)).to.deep.equal(['Oben', 'In Gruppe', 'Tief verschachtelt']);
    expect(result.pages[2]!.metadata.slideTitle).to.equal(null);
  });

  it('keeps a footer once as text and always as page metadata', async () => {
    const footer = textShape('© Akademie 2024', '<p:ph type="ftr"/>');
    const edited = editPackage(pptx, {
      'ppt/slides/slide2.xml': slideXml(textShape('Zwei') + footer),
      'ppt/slides/slide3.xml': slideXml(textShape('Drei') + footer),
    });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.text.split('© Akademie 2024')).to.have.length(2);
    expect(result.pages[2]!.metadata.footer).to.deep.equal(['© Akademie 2024']);
  });

  it('gives an empty success for a deck with zero slides', async () => {
    const edited = editPackage(pptx, {
      'ppt/presentation.xml': (old) => old.replace(/<p:sldIdLst>[\s\S]*<\/p:sldIdLst>/, ''),
    });
    const result = await extractPptx(edited, 'leer.pptx', extractOptions);
    expect(result.text).to.equal('');
    expect(result.pages).to.deep.equal([]);
    expect(result.metadata.slideCount).to.equal(0);
  });

  it('skips a malformed slide with a warning and keeps the others', async () => {
    const edited = editPackage(pptx, { 'ppt/slides/slide2.xml': '<p:sld><p:cSld x="1></p:sld>' });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.pages).to.have.length(3);
    expect(result.text).to.contain('Einführung in die Qualitätssicherung').and.contain('Folie 3');
    expect(result.warnings.join('\n')).to.contain('slide 2 skipped');
  });

  it("reads the slides by their parts' names when the slide list is damaged, with a warning", async () => {
    const ordered = await extractPptx(pptx, 'deck.pptx', extractOptions);
    const damages: Array<Record<string, (old: string) => string>> = [
      { 'ppt/_rels/presentation.xml.rels': (old) => old.slice(0, 120) },
      { 'ppt/presentation.xml': (old) => old.replace('<p:sldIdLst>', '<p:sldIdLst x="1>') },
    ];
    for (const damaged of damages) {
      const result = await extractPptx(editPackage(pptx, damaged), 'deck.pptx', extractOptions);
      expect(result.text).to.equal(ordered.text);
      expect(result.warnings.join('\n')).to.match(
        /^malformed XML in ppt\/.*: slides read in the order of their parts' names/,
      );
    }
  });

  it('keeps the numbers of the slides after a slide id without a slide part, which is skipped', async () => {
    const files = unzipSync(pptx);
    const presentation = strFromU8(files['ppt/presentation.xml']!);
    const second = presentation.match(/<p:sldId [^>]*\/>/g)![1]!;
    const dangling = presentation.replace(second, second.replace(/r:id="[^"]+"/, 'r:id="rIdNirgends"'));
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/presentation.xml': dangling }),
      'deck.pptx',
      extractOptions,
    );
    expect(
      result.pages.map((p) => [p.number, p.metadata.slideTitle ?? null, p.metadata.skipped ?? false]),
    ).to.deep.equal([
      [1, 'Einführung in die Qualitätssicherung', false],
      [2, null, true],
      [3, 'Folie 3', false],
    ]);
    expect(result.warnings.join('\n')).to.match(/slide 2 skipped: .*slide id \d+ has no slide part/);
  });

  it("reads the slides by their names when the presentation's relationships are gone, and a slide whose own are damaged", async () => {
    const noRels = await extractPptx(
      editPackage(pptx, { 'ppt/_rels/presentation.xml.rels': null }),
      'deck.pptx',
      extractOptions,
    );
    expect(noRels.pages.map((p) => p.metadata.slideTitle ?? null)).to.deep.equal([
      'Einführung in die Qualitätssicherung',
      'Begriffe',
      'Folie 3',
    ]);
    expect(noRels.warnings.join('\n')).to.contain("the presentation's relationships name no slide part");
    const damaged = await extractPptx(
      editPackage(pptx, {
        'ppt/slides/slide3.xml': slideXml(textShape('Noch da')),
        'ppt/slides/_rels/slide3.xml.rels': '<Relationships><kaputt',
      }),
      'deck.pptx',
      extractOptions,
    );
    expect(
      blocksOf(damaged)
        .filter((b) => b.page === 3)
        .map((b) => b.text),
    ).to.deep.equal(['Noch da']);
    expect(damaged.warnings.join('\n')).to.match(/slide3\.xml: its relationships are damaged/);
  });

  it('reads a chart title linked to a cell, and a negative list level as the top one', async () => {
    const chart = parseXml(
      '<c:chartSpace xmlns:c="c"><c:chart><c:title><c:tx><c:strRef><c:f>Tabelle1!$B$1</c:f><c:strCache><c:pt idx="0"><c:v>Umsatz je Quartal</c:v></c:pt></c:strCache></c:strRef></c:tx></c:title></c:chart></c:chartSpace>',
      'deck.pptx',
      'ppt/charts/chart1.xml',
    );
    expect(chartTexts(chart)).to.deep.equal(['Umsatz je Quartal']);
    // an equation as PowerPoint writes it: for itself (a14:m) and as runs for older readers
    const equation = parseXml(
      '<a:p xmlns:a="a" xmlns:mc="mc"><a:r><a:t>Formel: </a:t></a:r><mc:AlternateContent><mc:Choice Requires="a14"><a14:m xmlns:a14="a14"/></mc:Choice><mc:Fallback><a:r><a:t>E=mc2</a:t></a:r></mc:Fallback></mc:AlternateContent></a:p>',
      'deck.pptx',
      'ppt/slides/slide1.xml',
    );
    expect(paragraphText(equation)).to.equal('Formel: E=mc2');
    const list = `<p:sp><p:nvSpPr><p:cNvPr id="9" name="t"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:p><a:pPr lvl="-1"><a:buChar char="•"/></a:pPr><a:r><a:t>Punkt</a:t></a:r></a:p></p:txBody></p:sp>`;
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/slides/slide3.xml': slideXml(list) }),
      'deck.pptx',
      extractOptions,
    );
    const levels = blocksOf(result)
      .filter((b) => b.page === 3)
      .map((b) => b.level ?? 0);
    expect(Math.min(...levels)).to.equal(0);
  });

  it('reads xsd:boolean attributes written as words: show="false" hides a slide, vMerge="true" merges a cell', async () => {
    const table = `<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="5" name="T"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tr h="1"><a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>Rolle</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>Aufgabe</a:t></a:r></a:p></a:txBody></a:tc></a:tr><a:tr h="1"><a:tc vMerge="true"><a:txBody><a:bodyPr/><a:p><a:r><a:t>Rolle</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>Prüfen</a:t></a:r></a:p></a:txBody></a:tc></a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>`;
    const hidden = slideXml(table).replace('<p:sld ', '<p:sld show="false" ');
    const result = await extractPptx(
      editPackage(pptx, { 'ppt/slides/slide2.xml': hidden }),
      'deck.pptx',
      extractOptions,
    );
    expect(result.pages[1]!.metadata.hidden).to.equal(true);
    expect(result.pages[0]!.metadata.hidden).to.equal(undefined);
    const tableBlock = blocksOf(result).find((b) => b.type === 'table')!;
    expect(tableBlock.text.split('\n')[1]).to.not.contain('Rolle');
  });

  it('never resolves an external entity in slide XML', async () => {
    const target = existsSync('/etc/hostname') ? '/etc/hostname' : '/etc/passwd';
    const secret = readFileSync(target, 'utf8').trim().split('\n')[0]!;
    const prolog = `<!DOCTYPE p:sld [<!ENTITY xxe SYSTEM "file://${target}">]>`;
    const edited = editPackage(pptx, {
      'ppt/slides/slide3.xml': slideXml(textShape('Wert: [&xxe;]'), prolog),
    });
    const result = await extractPptx(edited, 'deck.pptx', extractOptions);
    expect(result.text).to.contain('Wert: []');
    expect(result.text).not.to.contain(secret);
  });

  it('refuses more slides than allowed and non-PowerPoint content', async () => {
    await extractError(pptx, ErrorCodes.TOO_MANY_PAGES, { ...extractOptions, maxPages: 2 });
    const tooLarge = await extractError(pptx, ErrorCodes.FILE_TOO_LARGE, {
      ...extractOptions,
      maxFileBytes: 100,
    });
    expect(tooLarge.details).to.deep.equal({ size: pptx.length, limit: 100 });
    await extractError(new TextEncoder().encode('%PDF-1.4\n'), ErrorCodes.FORMAT_MISMATCH);
    await extractError(pptx.subarray(0, 1000), ErrorCodes.CORRUPT_FILE);
  });
});
