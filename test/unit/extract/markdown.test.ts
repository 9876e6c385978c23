import { expect } from 'chai';
import { extractMarkdown } from '../../../src/extract/markdown.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';

const md = (text: string) => extractMarkdown(new TextEncoder().encode(text), 'doc.md');
const blocks = (doc: ExtractedDocument) =>
  doc.blocks.map((b) => {
    const entry: [string, string, number?] = [b.type, doc.text.slice(b.start, b.end)];
    if (b.level !== undefined) entry.push(b.level);
    return entry;
  });

describe('extract/markdown', () => {
  it('moves YAML front matter into metadata and takes the title from it', async () => {
    const doc = await md(
      '---\nTitle: Gesetz über den Nachweis\n  der Bedingungen\njurabk: NachwG\ndate: 2020-01-02\n---\n\n# Überschrift\n\nText.\n',
    );
    expect(doc.metadata.frontMatter).to.deep.equal({
      Title: 'Gesetz über den Nachweis der Bedingungen',
      jurabk: 'NachwG',
      date: '2020-01-02',
    });
    expect(doc.metadata.title).to.equal('Gesetz über den Nachweis der Bedingungen');
    expect(doc.text).to.equal('Überschrift\n\nText.');
  });

  it('keeps the document when the front matter is not valid YAML, with a warning', async () => {
    const doc = await md('---\ntitle: [unclosed\n---\nInhalt bleibt.\n');
    expect(doc.text).to.equal('Inhalt bleibt.');
    expect(doc.metadata.frontMatterRaw).to.equal('title: [unclosed');
    expect(doc.warnings).to.have.length(1);
    expect(doc.warnings[0]).to.match(/^front matter is not valid YAML/);
  });

  it('reads ATX and Setext headings with their levels, without the markup', async () => {
    const doc = await md(
      '# Titel #\n\nText\n\nKapitel\n=======\n\nAbschnitt\n---------\n\n### § 3 Pflichten {#sec-pflichten}\n\n####### kein Heading\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'Titel', 1],
      ['paragraph', 'Text'],
      ['heading', 'Kapitel', 1],
      ['heading', 'Abschnitt', 2],
      ['heading', '§ 3 Pflichten', 3],
      ['paragraph', '####### kein Heading'],
    ]);
    expect(doc.metadata.title).to.equal('Titel');
  });

  it('reads list items with their nesting depth, keeping markers and continuation lines', async () => {
    const doc = await md(
      'Liste:\n\n* Widerstände\n    * 47 Ω (Gelb)\n    * 470 Ω\n      fortgesetzt\n* Kondensatoren\n\n1.  der Name,\n2.  die Anschrift.\n\nDanach Text.\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Liste:'],
      ['list_item', '* Widerstände', 0],
      ['list_item', '* 47 Ω (Gelb)', 1],
      ['list_item', '* 470 Ω\nfortgesetzt', 1],
      ['list_item', '* Kondensatoren', 0],
      ['list_item', '1.  der Name,', 0],
      ['list_item', '2.  die Anschrift.', 0],
      ['paragraph', 'Danach Text.'],
    ]);
  });

  it('keeps a table as one block with its raw rows', async () => {
    const doc = await md('Vorher\n\n| L | C |\n|:--|--:|\n| a | b |\n| ä | ö |\n\nNachher\n');
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Vorher'],
      ['table', '| L | C |\n|:--|--:|\n| a | b |\n| ä | ö |'],
      ['paragraph', 'Nachher'],
    ]);
  });

  it('keeps fenced and indented code verbatim, including lines that look like markup', async () => {
    const doc = await md(
      'Text\n\n```python title="x"\n# kein Heading\n\n    eingerückt\n```\n\n    code block\n      mehr\n\nEnde\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Text'],
      ['code', '```python title="x"\n# kein Heading\n\n    eingerückt\n```'],
      ['code', '    code block\n      mehr'],
      ['paragraph', 'Ende'],
    ]);
  });

  it('drops pandoc/Quarto div fences but keeps their content, and drops thematic breaks', async () => {
    const doc = await md(
      '::: {.callout-note title="Zusammenfassung"}\n\nDieses **Kapitel** erklärt [Datenschutz](#datenschutz).\n\n:::\n\n----\n\n> Zitat\n> weiter\n',
    );
    expect(blocks(doc)).to.deep.equal([
      ['paragraph', 'Dieses **Kapitel** erklärt [Datenschutz](#datenschutz).'],
      ['paragraph', '> Zitat\n> weiter'],
    ]);
  });

  it('decodes Latin-1 Markdown', async () => {
    const bytes = new Uint8Array([
      0x23, 0x23, 0x20, 0x6b, 0xf6, 0x6e, 0x6e, 0x65, 0x6e, 0x0a, 0x0a, 0xe4, 0xf6, 0xfc, 0xdf, 0x0a,
    ]);
    const doc = await extractMarkdown(bytes, 'latin1.md');
    expect(blocks(doc)).to.deep.equal([
      ['heading', 'können', 2],
      ['paragraph', 'äöüß'],
    ]);
    expect(doc.metadata.encoding).to.equal('iso-8859-1');
  });

  it('is one logical page unless form feeds split it', async () => {
    expect((await md('# A\n\nText')).pages).to.have.length(1);
    const paged = await md('# A\n\nText\f# B\n\nMehr');
    expect(paged.pages.map((p) => paged.text.slice(p.start, p.end))).to.deep.equal([
      'A\n\nText',
      'B\n\nMehr',
    ]);
  });
});
