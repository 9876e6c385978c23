import { Ajv } from 'ajv';
import { expect } from 'chai';
import { ConfigError } from '../../../src/errors.js';
import { DocumentBuilder } from '../../../src/extract/document-builder.js';
import {
  type ChunkDraft,
  chunkConfigFromJson,
  chunkConfigSchema,
  chunkDocument,
  defaultChunkConfig,
  tinyChunkChars,
} from '../../../src/text/chunk.js';
import { chunkQuality } from '../../../src/text/quality.js';
import { sectionStartPath } from '../../../src/text/section-starts.js';
import { segmentDocument } from '../../../src/text/segment.js';
import { buildSections, sectionAt } from '../../../src/text/structure.js';
import { countTokens } from '../../../src/text/tokenizer.js';
import { markdownDocument } from './markdown-doc.js';

const SUBJECTS = ['Die Auszubildende', 'Der Betrieb', 'Die Ausbilderin', 'Das Team', 'Die zuständige Stelle'];
const VERBS = ['dokumentiert', 'bespricht', 'plant', 'bewertet', 'überprüft'];
const OBJECTS = [
  'den Ausbildungsnachweis',
  'die Lernziele',
  'den Arbeitsschutz',
  'die Auftragsklärung',
  'die Ergebnisse',
];
const TAILS = [
  'gemäß § 14 Abs. 2 BBiG.',
  'z. B. am 1. Oktober im 2. Ausbildungsjahr.',
  'd. h. vor Beginn der Phase.',
  'und hält alles fest.',
];

/** German paragraph of `n` sentences; `seed` varies the wording. */
function paragraph(n: number, seed = 0): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = seed * 7 + i;
    out.push(`${SUBJECTS[k % 5]} ${VERBS[(k >> 1) % 5]} ${OBJECTS[(k >> 2) % 5]} ${TAILS[(k * 3) % 4]}`);
  }
  return out.join(' ');
}

function expectExact(text: string, chunks: ChunkDraft[]): void {
  for (const c of chunks) {
    expect(c.content, `chunk ${c.index}`).to.equal(text.slice(c.start, c.end));
    expect(c.tokenCount).to.equal(countTokens(c.content));
  }
}

describe('chunkDocument', () => {
  it('keeps every chunk within max_chars with exact offsets and the heading path of its start', () => {
    const parts = ['# Handbuch'];
    for (let k = 1; k <= 3; k++) {
      parts.push(`## Kapitel ${k}`);
      for (let s = 1; s <= 3; s++)
        parts.push(`### Abschnitt ${k}.${s}`, paragraph(12, k * 10 + s), paragraph(9, k * 20 + s));
    }
    const doc = markdownDocument(parts.join('\n\n'));
    const sections = buildSections(doc);
    const chunks = chunkDocument(doc, { sections });
    expect(chunks.length).to.be.greaterThan(5);
    expectExact(doc.text, chunks);
    for (const c of chunks) {
      expect(c.end - c.start).to.be.at.most(defaultChunkConfig.maxChars);
      expect(c.headingPath).to.deep.equal(sections[sectionAt(sections, c.start)]?.headingPath);
      expect(c.metadata.tokenizer).to.equal('cpe-estimate-v1');
    }
    expect(chunks[3]?.headingPath[0]).to.match(/^Kapitel \d$/);
  });

  it('repeats whole sentences as overlap (5-15%) when a section continues, and none at a section start', () => {
    const doc = markdownDocument(
      [
        '# T',
        '## Langer Abschnitt',
        paragraph(40, 1),
        paragraph(40, 2),
        '## Nächster',
        paragraph(30, 3),
      ].join('\n\n'),
    );
    const sections = buildSections(doc);
    const chunks = chunkDocument(doc, { sections });
    const q = chunkQuality(doc.text, chunks, {
      maxChars: 2000,
      tinyChars: tinyChunkChars(defaultChunkConfig),
      blocks: doc.blocks,
      sections,
    });
    expect(q.overlapContinued).to.be.within(0.05, 0.15);
    const atNext = chunks.find((c) => c.headingPath[0] === 'Nächster');
    expect(atNext?.metadata.overlapChars).to.equal(0);
    expect(doc.text.slice(atNext?.start, atNext?.end).startsWith('Nächster')).to.equal(true);
    for (let i = 1; i < chunks.length; i++) {
      const c = chunks[i] as ChunkDraft;
      if (c.metadata.overlapChars > 0) {
        // the overlap starts at a sentence start: the character before is white space after a period
        expect(doc.text.slice(c.start - 2, c.start)).to.match(/[.!?]\s$/);
      }
    }
  });

  it('never leaves a heading at the end of a chunk when its body follows', () => {
    // the first section fills a chunk almost exactly, so a greedy cut would fall right after the next heading
    for (let fill = 1700; fill <= 2000; fill += 30) {
      let first = paragraph(30, 4);
      first = first.slice(0, first.lastIndexOf('.', fill) + 1);
      const doc = markdownDocument(
        ['## Eins', first, '### Zwei', paragraph(6, 5), '### Drei', paragraph(6, 6)].join('\n\n'),
      );
      const chunks = chunkDocument(doc);
      const q = chunkQuality(doc.text, chunks, { maxChars: 2000, tinyChars: 100, blocks: doc.blocks });
      expect(q.headingAtEnd, `fill ${fill}`).to.equal(0);
      for (const c of chunks) expect(c.content.trimEnd().endsWith('Zwei'), `fill ${fill}`).to.equal(false);
    }
  });

  it('keeps a heading with the first piece of an oversized table or sentence right after it', () => {
    const rows = Array.from(
      { length: 60 },
      (_, i) => `| Modul ${i} | Inhalt der Schulung Nummer ${i} über Arbeitssicherheit |`,
    );
    const table = ['| Modul | Inhalt |', '|---|---|', ...rows].join('\n');
    const words = Array.from({ length: 400 }, (_, i) => `Begriff${i}`).join(' ');
    for (const body of [table, words]) {
      const doc = markdownDocument(`## Einleitung\n\nKurz.\n\n## Lange Übersicht\n\n${body}\n`);
      const chunks = chunkDocument(doc);
      expectExact(doc.text, chunks);
      for (const c of chunks) expect(c.end - c.start).to.be.at.most(2000);
      expect(chunks.map((c) => c.content).filter((c) => c.trim() === 'Lange Übersicht')).to.deep.equal([]);
      const q = chunkQuality(doc.text, chunks, { maxChars: 2000, tinyChars: 100, blocks: doc.blocks });
      expect(q.headingAtEnd).to.equal(0);
    }
  });

  it('cuts a single sentence longer than max_chars at word boundaries', () => {
    const words: string[] = [];
    for (let i = 0; words.join(' ').length < 5200; i++) words.push(`Wort${i}lang`);
    const sentence = `${words.join(' ')}.`;
    const doc = markdownDocument(`## Lang\n\n${sentence}`);
    const chunks = chunkDocument(doc);
    expect(chunks.length).to.be.greaterThan(2);
    expectExact(doc.text, chunks);
    const q = chunkQuality(doc.text, chunks, { maxChars: 2000, tinyChars: 0 });
    expect(q.midWordStart).to.equal(0);
    expect(q.midWordEnd).to.equal(0);
    for (const c of chunks) expect(c.end - c.start).to.be.at.most(2000);
    expect(chunks.some((c) => c.metadata.cut === 'word')).to.equal(true);
  });

  it('does not merge two top-level sections unless both are tiny', () => {
    const big = markdownDocument(
      ['## Erster Teil', paragraph(7, 1), '## Zweiter Teil', paragraph(7, 2)].join('\n\n'),
    );
    const bigChunks = chunkDocument(big);
    expect(bigChunks.map((c) => c.headingPath)).to.deep.equal([['Erster Teil'], ['Zweiter Teil']]);

    const tiny = markdownDocument(
      ['## Kurz A', 'Nur ein Satz hier im ersten Teil.', '## Kurz B', 'Und ein Satz im zweiten Teil.'].join(
        '\n\n',
      ),
    );
    const tinyChunks = chunkDocument(tiny);
    expect(tinyChunks).to.have.length(1);
    expect(tinyChunks[0]?.headingPath).to.deep.equal(['Kurz A']);
    expect(tinyChunks[0]?.metadata.lastSectionIndex).to.equal(1);
    expect(bigChunks.map((c) => c.metadata.sectionStarts)).to.deep.equal([undefined, undefined]);
  });

  it('records where each section that starts inside a chunk begins, with its heading path and page', () => {
    const b = new DocumentBuilder('pdf');
    b.startPage(1);
    b.add('heading', 'Urlaubsgesetz', 1);
    b.add('heading', '§ 1 Kurz', 2);
    b.add('paragraph', 'Erster kurzer Paragraf über Urlaub.');
    b.startPage(2);
    b.add('heading', '§ 2 Kurz', 2);
    b.add('paragraph', 'Zweiter kurzer Paragraf über Kündigung.');
    const doc = b.build();
    const [chunk, ...rest] = chunkDocument(doc);
    expect(rest).to.have.length(0);
    // the single top heading is the title: its section holds the chunk's start
    expect(chunk!.headingPath).to.deep.equal(['Urlaubsgesetz']);
    const starts = chunk!.metadata.sectionStarts ?? [];
    expect(starts.map(({ offset: _, ...rest }) => rest)).to.deep.equal([
      { heading: '§ 1 Kurz', depth: 1, page: 1 },
      { heading: '§ 2 Kurz', depth: 1, page: 2 },
    ]);
    expect(starts.map((s) => chunk!.content.slice(s.offset).split('\n')[0])).to.deep.equal([
      '§ 1 Kurz',
      '§ 2 Kurz',
    ]);
  });

  it("stores a later section's heading path by its heading and depth, rebuilt from the path before it", () => {
    const doc = markdownDocument(
      [
        '# Gesetz',
        '## Erster Abschnitt',
        '### § 1 Zweck',
        'Kurzer Paragraf.',
        '### § 2 Geltung',
        'Noch ein kurzer Paragraf.',
        '## Zweiter Abschnitt',
        '### § 3 Pflichten',
        'Ein dritter kurzer Paragraf.',
      ].join('\n\n'),
    );
    const [chunk] = chunkDocument(doc);
    const paths: string[][] = [chunk!.headingPath];
    for (const start of chunk!.metadata.sectionStarts ?? [])
      paths.push(sectionStartPath(start, paths.at(-1)!) ?? ['?']);
    expect(paths).to.deep.equal([
      ['Gesetz'],
      ['Erster Abschnitt'],
      ['Erster Abschnitt', '§ 1 Zweck'],
      ['Erster Abschnitt', '§ 2 Geltung'],
      ['Zweiter Abschnitt'],
      ['Zweiter Abschnitt', '§ 3 Pflichten'],
    ]);
  });

  it('merges subsections inside one top-level section', () => {
    const doc = markdownDocument(
      [
        '## Kapitel',
        '### § 1 Kurz',
        'Erster kurzer Paragraf.',
        '### § 2 Kurz',
        'Zweiter kurzer Paragraf.',
        '### § 3 Kurz',
        'Dritter.',
      ].join('\n\n'),
    );
    const chunks = chunkDocument(doc);
    expect(chunks).to.have.length(1);
    expect(chunks[0]?.content).to.contain('§ 3 Kurz');
  });

  it('does not leave a tiny trailing piece: the last two chunks of a section are balanced', () => {
    let body = paragraph(30, 7);
    body = body.slice(0, body.lastIndexOf('.', 2150) + 1);
    const doc = markdownDocument(`## Abschnitt\n\n${body}`);
    const chunks = chunkDocument(doc);
    expect(chunks).to.have.length(2);
    for (const c of chunks) expect(c.end - c.start).to.be.at.least(tinyChunkChars(defaultChunkConfig));
  });

  it('limits chunks by target_tokens as well as max_chars', () => {
    const doc = markdownDocument(`## Zahlen\n\n${paragraph(60, 8)}`);
    const chunks = chunkDocument(doc, { config: { targetTokens: 120, maxChars: 4000 } });
    expect(chunks.length).to.be.greaterThan(5);
    for (const c of chunks) expect(c.tokenCount).to.be.at.most(125);
  });

  it('fills a chunk up to exactly target_tokens, never beyond', () => {
    // sentences of exactly five tokens (four short words and a period; the space between is free)
    const sentence = 'Aaaa bbbb cccc dddd.';
    expect(countTokens(sentence)).to.equal(5);
    const doc = markdownDocument(Array.from({ length: 35 }, () => sentence).join(' '));
    const chunks = chunkDocument(doc, { config: { targetTokens: 50, maxChars: 6000, overlapRatio: 0 } });
    expect(chunks.map((c) => c.tokenCount)).to.deep.equal([50, 50, 50, 25]);
    expectExact(doc.text, chunks);
  });

  it("gives the same chunks from the segment step's segments as from the blocks", () => {
    const md = [
      '# Ausbildungsordnung',
      paragraph(3, 1),
      '## § 1 Ausbildungsberuf',
      paragraph(14, 2),
      '-   Erster Punkt der Liste mit etwas Text.',
      '-   Zweiter Punkt.',
      '## § 2 Dauer',
      `${paragraph(2, 3)}\n\n| Jahr | Stunden |\n|---|---|\n| 1 | 1.200 |\n| 2 | 1.300 |`,
      '### § 2a Verkürzung',
      'x'.repeat(2500),
      paragraph(9, 4),
    ].join('\n\n');
    const doc = markdownDocument(md);
    const sections = buildSections(doc);
    for (const config of [{}, { targetTokens: 90, maxChars: 400, minChars: 40 }]) {
      const fromBlocks = chunkDocument(doc, { config, sections });
      const fromSegments = chunkDocument(doc, { config, sections, segments: segmentDocument(doc, sections) });
      expect(fromSegments).to.deep.equal(fromBlocks);
      expectExact(doc.text, fromBlocks);
      // without sections the chunker reads the heading tree itself (SectionOutline), to the same result
      expect(chunkDocument(doc, { config })).to.deep.equal(fromBlocks);
    }
  });

  it('appends page vision text to content, keeping offsets of the source text', () => {
    const b = new DocumentBuilder('pdf');
    b.startPage(1);
    b.add('heading', 'Seite eins', 1);
    b.add('paragraph', paragraph(5, 1));
    b.startPage(2);
    b.add('paragraph', paragraph(5, 2));
    const doc = b.build();
    const vision = new Map([[2, 'Ein Diagramm mit drei Balken.']]);
    const chunks = chunkDocument(doc, { pageVisionText: vision });
    const withVision = chunks.filter((c) => c.metadata.visionPages?.includes(2));
    expect(withVision).to.have.length(1);
    const c = withVision[0] as ChunkDraft;
    expect(c.content.startsWith(doc.text.slice(c.start, c.end))).to.equal(true);
    expect(c.content.endsWith('[Bildbeschreibung Seite 2]\nEin Diagramm mit drei Balken.')).to.equal(true);
    expect(c.tokenCount).to.equal(countTokens(c.content));
    expect(c.pageEnd).to.equal(2);
  });

  it('makes a chunk of vision text alone when a document has no text', () => {
    const b = new DocumentBuilder('pdf');
    b.startPage(1);
    const chunks = chunkDocument(b.build(), {
      pageVisionText: new Map([[1, 'Ein eingescanntes Formular.']]),
    });
    expect(chunks).to.have.length(1);
    expect(chunks[0]?.content).to.contain('Ein eingescanntes Formular.');
    expect(chunks[0]?.metadata.visionOnly).to.equal(true);
  });

  it('keeps every piece of a token-dense block within the token budget, and its heading with the first', () => {
    const digits = Array.from({ length: 450 }, (_, i) => i % 10).join(',');
    const doc = markdownDocument(`## Zahlen\n\n${digits}.`);
    const chunks = chunkDocument(doc);
    for (const c of chunks) expect(c.tokenCount, c.content.slice(0, 30)).to.be.at.most(600);
    expect(chunks[0]!.content.startsWith('Zahlen\n\n0,1,2')).to.equal(true);
    const emoji = chunkDocument(markdownDocument('😀'.repeat(700)));
    expect(emoji.length).to.be.greaterThan(1);
    for (const c of emoji) expect(c.tokenCount).to.be.at.most(600);
  });

  it('never cuts between the halves of a surrogate pair', () => {
    const text = `x${'😀'.repeat(1000)}`;
    for (const c of chunkDocument(markdownDocument(text))) {
      // a lone half does not survive UTF-8
      expect(Buffer.from(c.content, 'utf8').toString('utf8')).to.equal(c.content);
    }
  });

  it('keeps the headings above an oversized paragraph with its first piece, and leaves no scrap at its end', () => {
    const words = Array.from({ length: 600 }, (_, i) => `Begriff${i}`).join(' ');
    const chained = chunkDocument(markdownDocument(`# Handbuch Ausbildung\n\n## Einleitung\n\n${words}`));
    expect(chained[0]!.content.startsWith('Handbuch Ausbildung\n\nEinleitung\n\nBegriff0')).to.equal(true);
    // just over one chunk in one sentence: two halves, not 1,996 characters and 24
    const long = Array.from({ length: 280 }, (_, i) => `Wort${i}`).join(' ');
    const halves = chunkDocument(markdownDocument(`## Abschnitt\n\n${long}.`));
    expect(halves).to.have.length(2);
    for (const c of halves) expect(c.content.length, c.content.slice(0, 20)).to.be.above(500);
  });

  it('keeps headings with the start of a first sentence that fits a chunk alone but not beside them', () => {
    const law =
      '(1) Der Arbeitgeber hat durch eine Beurteilung der für die Beschäftigten mit ihrer Arbeit verbundenen ' +
      'Gefährdung zu ermitteln, welche Maßnahmen des Arbeitsschutzes erforderlich sind, wobei er insbesondere die ' +
      'Gestaltung und die Einrichtung der Arbeitsstätte und des Arbeitsplatzes, physikalische, chemische und ' +
      'biologische Einwirkungen, die Gestaltung, die Auswahl und den Einsatz von Arbeitsmitteln sowie die ' +
      'Gestaltung von Arbeits- und Fertigungsverfahren zu berücksichtigen hat.';
    const words = Array.from({ length: 400 }, (_, i) => `Wort${i}`).join(' ');
    const long = `${words.slice(0, words.lastIndexOf(' ', 1985))}.`; // fits 2,000 characters alone
    const cases = [
      {
        md: `# Arbeitsschutzgesetz\n\n## § 5 Beurteilung der Arbeitsbedingungen\n\n${law}\n\n## § 6 Dokumentation\n\n${paragraph(2)}`,
        config: { maxChars: 500 },
        body: law,
        start: 'Arbeitsschutzgesetz\n\n§ 5 Beurteilung der Arbeitsbedingungen\n\n(1) Der Arbeitgeber',
      },
      {
        md: `# Kapitel Eins\n\n## Abschnitt mit langem Satz\n\n${long}\n\n## Zwei\n\n${paragraph(3)}`,
        config: {},
        body: long,
        start: 'Kapitel Eins\n\nAbschnitt mit langem Satz\n\nWort0 Wort1',
      },
      {
        // within max_chars together, but over target_tokens: the token budget splits the sentence
        md: `## Arbeitsbedingungen im Betrieb\n\n${law}\n\n## Zwei\n\n${paragraph(3)}`,
        config: { targetTokens: countTokens(law) + 2, maxChars: 1000 },
        body: law,
        start: 'Arbeitsbedingungen im Betrieb\n\n(1) Der Arbeitgeber',
      },
    ];
    for (const { md, config, body, start } of cases) {
      const doc = markdownDocument(md);
      const sections = buildSections(doc);
      const chunks = chunkDocument(doc, { config, sections });
      const full = { ...defaultChunkConfig, ...config };
      const { maxChars, targetTokens } = full;
      expectExact(doc.text, chunks);
      expect(chunks[0]?.content.startsWith(start), chunks[0]?.content).to.equal(true);
      expect(chunks[0]?.metadata.cut).to.equal('word');
      for (const c of chunks) {
        expect(c.end - c.start).to.be.at.most(maxChars);
        expect(c.tokenCount).to.be.at.most(targetTokens);
      }
      // the sentence is cut in two, neither piece a scrap
      const at = doc.text.indexOf(body);
      const [head, rest] = [chunks[0]!, chunks[1]!];
      expect(doc.text.slice(head.end, rest.start)).to.equal(' ');
      expect(head.end - at).to.be.at.least(tinyChunkChars(full));
      expect(at + body.length - rest.start).to.be.at.least(tinyChunkChars(full));
      const q = chunkQuality(doc.text, chunks, { maxChars, tinyChars: 0, blocks: doc.blocks });
      expect(q.headingAtEnd, start).to.equal(0);
      expect(q.midWordEnd).to.equal(0);
      const segments = segmentDocument(doc, sections);
      expect(chunkDocument(doc, { config, sections, segments })).to.deep.equal(chunks);
    }
  });

  it('keeps a first sentence whole when it fits a chunk beside its headings, to the last character and token', () => {
    const words = Array.from({ length: 400 }, (_, i) => `Wort${i}`).join(' ');
    const sentence = `${words.slice(0, words.lastIndexOf(' ', 1900))}.`;
    const doc = markdownDocument(`# Handbuch\n\n## Abschnitt\n\n${sentence}`);
    const config = { maxChars: doc.text.length, targetTokens: countTokens(doc.text) };
    expect(chunkDocument(doc, { config }).map((c) => c.content)).to.deep.equal([doc.text]);
  });

  it('returns no chunks for an empty document', () => {
    expect(chunkDocument({ text: '', blocks: [], pages: [] })).to.deep.equal([]);
  });
});

describe('chunk config', () => {
  it('validates with ajv, filling defaults in snake_case', () => {
    const ajv = new Ajv({ useDefaults: true });
    const validate = ajv.compile(chunkConfigSchema);
    const config: Record<string, unknown> = {};
    expect(validate(config)).to.equal(true);
    expect(config).to.deep.equal({ target_tokens: 600, overlap: 0.1, min_chars: 100, max_chars: 2000 });
    expect(validate({ max_chars: 10 })).to.equal(false);
    expect(validate.errors?.[0]?.instancePath).to.equal('/max_chars');
  });

  it('maps snake_case keys and rejects contradictions with a message naming the keys', () => {
    expect(chunkConfigFromJson({ target_tokens: 700, overlap: 0.15, max_chars: 3000 })).to.deep.equal({
      targetTokens: 700,
      overlapRatio: 0.15,
      minChars: 100,
      maxChars: 3000,
    });
    expect(() => chunkConfigFromJson({ min_chars: 500, max_chars: 400 }))
      .to.throw(ConfigError)
      .with.property('message')
      .that.contains('config.min_chars');
  });
});
