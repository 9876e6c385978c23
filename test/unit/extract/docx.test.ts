import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Document, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { type CpeError, ErrorCodes } from '../../../src/errors.js';
import { extractDocx } from '../../../src/extract/docx.js';
import { altChunksAsParagraphs } from '../../../src/extract/docx-altchunk.js';
import { rewriteForMammoth } from '../../../src/extract/docx-compat.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';
import {
  buildZip,
  editPackage,
  extractOptions,
  makeDocx,
  type RawEntry,
  renameMainPart,
  zerosDeflate,
} from './office-fixtures.js';

const blockTexts = (doc: ExtractedDocument, type: string) =>
  doc.blocks.filter((b) => b.type === type).map((b) => doc.text.slice(b.start, b.end));

/** The headings as [text, level]. */
const headingsOf = (doc: ExtractedDocument) =>
  doc.blocks.filter((b) => b.type === 'heading').map((b) => [doc.text.slice(b.start, b.end), b.level]);

/** Inserts body XML just before the section properties (the end of the body). */
const insertIntoBody = (xml: string) => (old: string) => {
  const at = old.lastIndexOf('<w:sectPr');
  return old.slice(0, at) + xml + old.slice(at);
};

/** The bytes of every entry of a package, inflated. */
const unzippedSize = (bytes: Uint8Array): number =>
  Object.values(unzipSync(bytes)).reduce((sum, data) => sum + data.length, 0);

async function extractError(bytes: Uint8Array, code: string, options = extractOptions): Promise<CpeError> {
  try {
    await extractDocx(bytes, 'test.docx', options);
  } catch (error) {
    expect((error as CpeError).code, (error as Error).message).to.equal(code);
    expect((error as Error).message).to.contain('test.docx');
    return error as CpeError;
  }
  return expect.fail(`expected ${code}`);
}

describe('extract/docx', () => {
  let docx: Uint8Array;
  let doc: ExtractedDocument;
  before(async () => {
    docx = await makeDocx();
    doc = await extractDocx(docx, 'handbuch.docx', extractOptions);
  });

  it('turns Title and heading styles into title/heading blocks with levels', () => {
    const headings = headingsOf(doc);
    expect(blockTexts(doc, 'title')).to.deep.equal(['Handbuch für Prüfer']);
    expect(headings).to.deep.equal([
      ['Einführung', 1],
      ['Grundlagen', 2],
      ['Anhang', 1],
    ]);
  });

  it('keeps German text, list levels and table rows', () => {
    expect(doc.text).to.contain('Die Größe der Änderung ist überschaubar.');
    const items = doc.blocks
      .filter((b) => b.type === 'list_item')
      .map((b) => [doc.text.slice(b.start, b.end), b.level]);
    expect(items).to.deep.equal([
      ['Erster Punkt', 0],
      ['Unterpunkt', 1],
    ]);
    expect(blockTexts(doc, 'table')).to.deep.equal(['Begriff | Bedeutung\nAudit | Prüfung']);
  });

  it('keeps a nested table inside its cell with its own separators', async () => {
    const cell = (...content: (Paragraph | Table)[]) => new TableCell({ children: content });
    const row = (...cells: TableCell[]) => new TableRow({ children: cells });
    const inner = new Table({
      rows: [
        row(cell(new Paragraph('i1')), cell(new Paragraph('i2'))),
        row(cell(new Paragraph('i3')), cell(new Paragraph('i4'))),
      ],
    });
    const outer = new Table({
      rows: [
        row(cell(new Paragraph('Außen'), inner), cell(new Paragraph('B'))),
        row(cell(new Paragraph('C')), cell(new Paragraph('D'))),
      ],
    });
    const bytes = new Uint8Array(await Packer.toBuffer(new Document({ sections: [{ children: [outer] }] })));
    const result = await extractDocx(bytes, 'nested.docx', extractOptions);
    expect(blockTexts(result, 'table')).to.deep.equal(['Außen i1; i2 / i3; i4 | B\nC | D']);
  });

  it('keeps footnotes as footnote blocks labelled like their reference', () => {
    expect(doc.text).to.contain('überschaubar.[1]');
    expect(blockTexts(doc, 'footnote')).to.deep.equal(['[1] Quelle: ISO 9001, Abschnitt 4.1']);
  });

  it('puts headers, footers and core properties into metadata, not into the text', () => {
    expect(doc.metadata.headers).to.deep.equal(['Kopfzeile Schulung']);
    expect(doc.metadata.footers).to.deep.equal(['Fußzeile Seite']);
    expect(doc.text).not.to.contain('Kopfzeile');
    expect(doc.metadata.title).to.equal('Handbuch Qualitätssicherung');
    expect(doc.metadata.author).to.equal('Jürgen Müller');
  });

  it('starts a new logical page at an explicit page break', () => {
    expect(doc.pages.map((p) => p.number)).to.deep.equal([1, 2]);
    const anhang = doc.blocks.find((b) => doc.text.slice(b.start, b.end) === 'Anhang');
    expect(anhang?.page).to.equal(2);
    expect(doc.pages[0]!.metadata.tables).to.equal(1);
  });

  it('keeps a heading whole when a page break falls inside it, and starts the page where the break says', async () => {
    const run = (text: string) => `<w:r><w:t xml:space="preserve">${text}</w:t></w:r>`;
    const pageBreak = '<w:r><w:br w:type="page"/></w:r>';
    const heading = (inner: string) => `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr>${inner}</w:p>`;
    const paragraph = (text: string) => `<w:p>${run(text)}</w:p>`;
    const edited = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        heading(run('Kapitel 2') + pageBreak + run('Einleitung')) +
          paragraph('Der erste Absatz des Kapitels.') +
          heading(pageBreak + run('Kapitel 3')) +
          paragraph('Der zweite Absatz.'),
      ),
    });
    const result = await extractDocx(edited, 'umbruch.docx', extractOptions);
    const headings = headingsOf(result);
    expect(headings).to.deep.include(['Kapitel 2 Einleitung', 1]);
    expect(headings.map(([text]) => text)).to.not.include('Kapitel 2');
    expect(headings.map(([text]) => text)).to.not.include('Einleitung');
    const pageOf = (text: string) =>
      result.blocks.find((b) => result.text.slice(b.start, b.end) === text)?.page;
    const first = pageOf('Kapitel 2 Einleitung')!;
    expect(pageOf('Der erste Absatz des Kapitels.')).to.equal(first + 1);
    expect(pageOf('Kapitel 3')).to.equal(first + 2);
    expect(pageOf('Der zweite Absatz.')).to.equal(first + 2);
  });

  it('reads altChunks of HTML, MHT and plain text; one that is not a document it knows stays unread, with a warning', async () => {
    const rel = (id: string, target: string) =>
      `<Relationship Id="${id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/aFChunk" Target="${target}"/>`;
    const chunk = (id: string) => `<w:altChunk r:id="${id}"/>`;
    const html =
      '<html><head><meta charset="utf-8"><title>Titel der Seite</title><style>p { color: red }</style></head><body>' +
      '<h2>Importierte Regeln</h2><p>Die Pr&uuml;fung erfolgt j&auml;hrlich &amp; schriftlich.</p>' +
      '<table><tr><td>Rolle</td><td>Aufgabe</td></tr></table><!-- ein Kommentar --></body></html>';
    const mht =
      'MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary="----=_NextPart_01"\r\n\r\n' +
      '------=_NextPart_01\r\nContent-Type: text/html; charset="windows-1252"\r\n' +
      'Content-Transfer-Encoding: quoted-printable\r\n\r\n' +
      '<html><body><p>Gr=FC=DFe aus der Schulung, mit einem Satz, der =\r\numgebrochen wird.</p></body></html>\r\n' +
      '------=_NextPart_01--\r\n';
    const edited = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        chunk('rIdHtml') + chunk('rIdMht') + chunk('rIdTxt') + chunk('rIdDocx'),
      ),
      'word/_rels/document.xml.rels': (old) =>
        old.replace(
          '</Relationships>',
          `${rel('rIdHtml', 'afchunk1.htm')}${rel('rIdMht', 'afchunk2.mht')}${rel('rIdTxt', 'afchunk3.txt')}${rel('rIdDocx', 'afchunk4.docx')}</Relationships>`,
        ),
      'word/afchunk1.htm': html,
      'word/afchunk2.mht': mht,
      'word/afchunk3.txt': 'Erster Absatz\naus zwei Zeilen.\n\nZweiter Absatz.',
      'word/afchunk4.docx': 'ein eingebettetes Dokument',
    });
    const result = await extractDocx(edited, 'eingebettet.docx', extractOptions);
    expect(headingsOf(result)).to.deep.include(['Importierte Regeln', 2]);
    const paragraphs = blockTexts(result, 'paragraph');
    expect(paragraphs).to.include.members([
      'Die Prüfung erfolgt jährlich & schriftlich.',
      'Rolle | Aufgabe',
      'Grüße aus der Schulung, mit einem Satz, der umgebrochen wird.',
      'Erster Absatz aus zwei Zeilen.',
      'Zweiter Absatz.',
    ]);
    for (const hidden of ['Titel der Seite', 'color: red', 'Kommentar', 'eingebettetes'])
      expect(result.text).to.not.contain(hidden);
    expect(result.warnings.filter((w) => w.includes('altChunk'))).to.have.length(1);
  });

  it('reads hostile HTML in an altChunk in one pass: unclosed comments, scripts, quotes and tags', async () => {
    const hostile = `<p>Vorher</p>${'<a title="'.repeat(80_000)}${'<!--'.repeat(80_000)}`;
    const part = (id: string) =>
      id === 'rId1' ? { bytes: new TextEncoder().encode(hostile), name: 'word/afchunk.htm' } : undefined;
    const open = `<p>Vorher</p>${'<script>x'.repeat(80_000)}`;
    const other = (id: string) =>
      id === 'rId1' ? { bytes: new TextEncoder().encode(open), name: 'word/afchunk.htm' } : undefined;
    const chunk = '<w:altChunk r:id="rId1"/>';
    expect((await altChunksAsParagraphs(chunk, part)).xml).to.contain('Vorher');
    expect((await altChunksAsParagraphs(chunk, other)).xml).to.contain('Vorher');
    // an altChunk left open is not read past the next one
    const open80k = await altChunksAsParagraphs(`${'<w:altChunk r:id="rId2">'.repeat(80_000)}${chunk}`, part);
    expect(open80k.xml).to.contain('Vorher');
  });

  it('reads altChunk HTML as a browser would: single quotes, a head left open, a BOM, ">" in an attribute', async () => {
    const texts = async (html: string | Uint8Array, chunk = '<w:altChunk r:id="rId1"/>') => {
      const bytes = typeof html === 'string' ? new TextEncoder().encode(html) : html;
      const part = (id: string) => (id === 'rId1' ? { bytes, name: 'word/afchunk.htm' } : undefined);
      const { xml } = await altChunksAsParagraphs(chunk, part);
      return [...xml.matchAll(/<w:t[^>]*>([^<]*)/g)].map((m) => m[1]);
    };
    expect(await texts('<p>Einzel</p>', "<w:altChunk r:id='rId1'/>")).to.deep.equal(['Einzel']);
    // HTML5 lets the head end where the body starts, without </head>
    expect(await texts('<html><head><title>T</title><body><h1>Titel</h1><p>Inhalt</p>')).to.deep.equal([
      'Titel',
      'Inhalt',
    ]);
    // "İ" lower-cased is two characters: the hidden parts are found in the text as written
    expect(
      await texts('<p>İİİİİİ</p><!-- c --><p>Hauptstadt</p><SCRIPT>x</Script><p>Nach</p>'),
    ).to.deep.equal(['İİİİİİ', 'Hauptstadt', 'Nach']);
    const bom = new TextEncoder().encode('\ufeff<meta charset="windows-1252"><p>Grüße</p>');
    expect(await texts(bom)).to.deep.equal(['Grüße']);
    expect(await texts('<meta charset="utf-16"><p>Grüße</p>')).to.deep.equal(['Grüße']);
    expect(await texts('<p><a href="x>y">Verweis</a> hier</p>')).to.deep.equal(['Verweis hier']);
  });

  it('reads altChunks of RTF and of a Word document, one level deep and within the outer limits', async () => {
    const rel = (id: string, target: string) =>
      `<Relationship Id="${id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/aFChunk" Target="${target}"/>`;
    const withChunks = (outer: Uint8Array, chunks: Record<string, string | Uint8Array>) =>
      editPackage(outer, {
        'word/document.xml': insertIntoBody(
          Object.keys(chunks)
            .map((_, i) => `<w:altChunk r:id="rIdChunk${i}"/>`)
            .join(''),
        ),
        'word/_rels/document.xml.rels': (old) =>
          old.replace(
            '</Relationships>',
            `${Object.keys(chunks)
              .map((name, i) => rel(`rIdChunk${i}`, name))
              .join('')}</Relationships>`,
          ),
        ...Object.fromEntries(Object.entries(chunks).map(([name, content]) => [`word/${name}`, content])),
      });
    const rtfChunk =
      "{\\rtf1\\ansi\\ansicpg1252{\\stylesheet{\\s1\\outlinelevel0 heading 1;}}\\pard\\s1 Aus RTF\\par\\pard Ein Absatz f\\'fcr alle.\\par}";
    const inner = withChunks(docx, { 'tiefer.docx': docx });
    const damaged = docx.slice(0, 200);
    const result = await extractDocx(
      withChunks(docx, { 'afchunk.rtf': rtfChunk, 'afchunk.docx': inner, 'kaputt.docx': damaged }),
      'eingebettet.docx',
      extractOptions,
    );
    expect(headingsOf(result)).to.deep.include.members([
      ['Aus RTF', 1],
      ['Einführung', 1],
      ['Grundlagen', 2],
    ]);
    const paragraphs = blockTexts(result, 'paragraph');
    expect(paragraphs).to.include.members(['Ein Absatz für alle.', 'Begriff | Bedeutung', 'Audit | Prüfung']);
    // the embedded document's own text once more, its embedded one not at all
    expect(paragraphs.filter((p) => p === 'Die Größe der Änderung ist überschaubar.[1]').length).to.equal(2);
    const warnings = result.warnings.filter((w) => w.includes('altChunk'));
    expect(warnings).to.have.length(2);
    expect(warnings[0]).to.equal(
      'altChunk word/afchunk.docx: altChunk word/tiefer.docx not read: a Word document inside an embedded one is not read',
    );
    expect(warnings[1]).to.match(/^altChunk word\/kaputt\.docx not read: truncated or corrupt ZIP/);

    // the embedded document inflates within what the outer one has left of its limit
    const outerOnly = await extractDocx(docx, 'klein.docx', extractOptions);
    expect(outerOnly.text).to.contain('Einführung');
    const tight = { ...extractOptions, maxUnzippedBytes: unzippedSize(docx) + unzippedSize(docx) / 2 };
    const limited = await extractDocx(withChunks(docx, { 'afchunk.docx': docx }), 'eng.docx', tight);
    expect(limited.warnings.join('\n')).to.match(/altChunk word\/afchunk\.docx not read: .*exceeds/);
  });

  it('leaves out a table of contents (Word\'s "toc N" under a "TOC Heading", LibreOffice\'s "Contents N")', async () => {
    const style = (id: string, name: string, basedOn = '') =>
      `<w:style w:type="paragraph" w:styleId="${id}"><w:name w:val="${name}"/>${basedOn ? `<w:basedOn w:val="${basedOn}"/>` : ''}</w:style>`;
    const line = (styleId: string, text: string) =>
      `<w:p><w:pPr><w:pStyle w:val="${styleId}"/></w:pPr><w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;
    const edited = editPackage(docx, {
      'word/styles.xml': (old) =>
        old.replace(
          '</w:styles>',
          `${style('Inhaltsverzeichnisberschrift', 'TOC Heading', 'Heading1')}${style('Verzeichnis1', 'toc 1')}${style('Verzeichnis2', 'toc 2')}${style('Contents1', 'Contents 1')}</w:styles>`,
        ),
      'word/document.xml': (old) =>
        old.replace(
          '<w:body>',
          `<w:body>${line('Inhaltsverzeichnisberschrift', 'Inhaltsverzeichnis')}${line('Verzeichnis1', '1 Einführung\t3')}${line('Verzeichnis2', '1.1 Grundlagen\t4')}${line('Contents1', '2 Anhang\t9')}`,
        ),
    });
    const result = await extractDocx(edited, 'verzeichnis.docx', extractOptions);
    for (const navigation of ['Inhaltsverzeichnis', '1 Einführung', '1.1 Grundlagen', '2 Anhang'])
      expect(result.text).to.not.contain(navigation);
    expect(headingsOf(result)).to.deep.include.members([
      ['Einführung', 1],
      ['Grundlagen', 2],
    ]);
  });

  it('reads the body of a document whose header or footer is damaged, with a warning naming the part', async () => {
    const names = Object.keys(unzipSync(docx)).filter((n) => /^word\/footer\d*\.xml$/.test(n));
    expect(names).to.not.be.empty;
    const edited = editPackage(docx, { [names[0]!]: (old) => old.slice(0, old.length / 2) });
    const result = await extractDocx(edited, 'fusszeile.docx', extractOptions);
    expect(result.text).to.contain('Die Größe der Änderung ist überschaubar.');
    expect(result.metadata.headers).to.deep.equal(['Kopfzeile Schulung']);
    expect(result.warnings).to.deep.include(`footer ${names[0]} not read: malformed XML in ${names[0]}`);
  });

  it("reads no property named like one of every object's (constructor) from the core properties", async () => {
    const edited = editPackage(docx, {
      'docProps/core.xml': (old) =>
        old.replace('</cp:coreProperties>', '<dc:constructor>x</dc:constructor></cp:coreProperties>'),
    });
    const result = await extractDocx(edited, 'eigenschaften.docx', extractOptions);
    expect(result.metadata.title).to.equal('Handbuch Qualitätssicherung');
    expect(Object.keys(result.metadata).filter((k) => k.includes('function'))).to.deep.equal([]);
  });

  it('reads a document whose main part has another name (word/document2.xml, as Word Online saves it)', async () => {
    const online = renameMainPart(docx, 'word/document.xml', 'word/document2.xml');
    const renamed = await extractDocx(online, 'online.docx', extractOptions);
    expect(renamed.text).to.equal(doc.text);
    expect(renamed.blocks).to.deep.equal(doc.blocks);
    expect(renamed.metadata).to.deep.equal(doc.metadata);
    expect(renamed.warnings).to.deep.equal(doc.warnings);
  });

  it('block offsets cut the text exactly', () => {
    for (const block of doc.blocks) expect(doc.text.slice(block.start, block.end).trim()).to.not.equal('');
    expect(doc.text.startsWith('Handbuch für Prüfer\n\nEinführung')).to.equal(true);
  });

  it('drops deleted text and keeps inserted text of tracked changes', async () => {
    const edited = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        '<w:p><w:r><w:t xml:space="preserve">Stand: </w:t></w:r>' +
          '<w:del w:id="901" w:author="A" w:date="2024-01-01T00:00:00Z"><w:r><w:delText>VERALTET</w:delText></w:r></w:del>' +
          '<w:ins w:id="902" w:author="A" w:date="2024-01-01T00:00:00Z"><w:r><w:t>AKTUELL</w:t></w:r></w:ins></w:p>',
      ),
    });
    const result = await extractDocx(edited, 'tracked.docx', extractOptions);
    expect(result.text).to.contain('Stand: AKTUELL');
    expect(result.text).not.to.contain('VERALTET');
  });

  it('leaves out hidden text: by the run, its character style or its paragraph style, in the body and headers', async () => {
    const run = (text: string, properties = '') =>
      `<w:r>${properties && `<w:rPr>${properties}</w:rPr>`}<w:t xml:space="preserve">${text}</w:t></w:r>`;
    const styles = (old: string) =>
      old.replace(
        '</w:styles>',
        '<w:style w:type="character" w:styleId="Versteckt"><w:name w:val="Versteckt"/><w:rPr><w:vanish/></w:rPr></w:style>' +
          '<w:style w:type="character" w:styleId="Loesung"><w:name w:val="Lösung"/><w:basedOn w:val="Versteckt"/></w:style>' +
          '<w:style w:type="paragraph" w:styleId="Autorenhinweis"><w:name w:val="Autorenhinweis"/><w:rPr><w:vanish w:val="true"/></w:rPr></w:style>' +
          '</w:styles>',
      );
    const edited = editPackage(docx, {
      'word/styles.xml': styles,
      'word/header1.xml': (old) =>
        old.replace(/<w:p\b[\s\S]*<\/w:p>/, `<w:p>${run('Kopf')}${run(' INTERN', '<w:vanish/>')}</w:p>`),
      'word/document.xml': insertIntoBody(
        `<w:p>${run('Frage: 2 + 2 = ')}${run('4', '<w:vanish/>')}${run('?')}</w:p>` +
          `<w:p>${run('Antwort: ')}${run('LÖSUNG B', '<w:rStyle w:val="Loesung"/>')}${run('siehe oben')}</w:p>` +
          `<w:p><w:pPr><w:pStyle w:val="Autorenhinweis"/></w:pPr>${run('Bitte bis Freitag prüfen.')}${run('Sichtbar trotz Stil', '<w:vanish w:val="0"/>')}</w:p>` +
          // the paragraph mark alone hidden: both paragraphs' text stays; web-hidden text is shown in print
          `<w:p><w:pPr><w:rPr><w:vanish/></w:rPr></w:pPr>${run('Erster Teil')}</w:p><w:p>${run('Seite ')}${run('7', '<w:webHidden/>')}</w:p>` +
          // a hidden run in a text box inside a visible run goes, the box's other text stays
          `<w:p><w:r><w:pict><v:textbox><w:txbxContent><w:p>${run('Kasten')}${run(' GEHEIM', '<w:vanish/>')}</w:p></w:txbxContent></v:textbox></w:pict></w:r></w:p>` +
          // a field's marks stay when hidden (no text; taking them out would break the field), its hidden result goes
          `<w:p>${run('Index')}<w:r><w:rPr><w:vanish/></w:rPr><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:rPr><w:vanish/></w:rPr><w:instrText> XE "Audit" </w:instrText></w:r><w:r><w:rPr><w:vanish/></w:rPr><w:fldChar w:fldCharType="end"/></w:r>${run('eintrag')}</w:p>` +
          // a tracked change of formatting: the old properties had it hidden, the run is shown now
          `<w:p>${run('Wieder sichtbar', '<w:rPrChange w:id="5" w:author="A" w:date="2024-01-01T00:00:00Z"><w:rPr><w:vanish/></w:rPr></w:rPrChange>')}</w:p>`,
      ),
    });
    const result = await extractDocx(edited, 'versteckt.docx', extractOptions);
    for (const shown of [
      'Frage: 2 + 2 = ?',
      'Antwort: siehe oben',
      'Sichtbar trotz Stil',
      'Erster Teil',
      'Seite 7',
      'Kasten',
      'Indexeintrag',
      'Wieder sichtbar',
    ])
      expect(result.text).to.contain(shown);
    for (const hidden of ['= 4', 'LÖSUNG', 'Bitte bis Freitag', 'GEHEIM'])
      expect(result.text).not.to.contain(hidden);
    expect(result.metadata.headers).to.deep.equal(['Kopf']);
    expect(result.metadata.hiddenRuns).to.equal(4);
    expect((await extractDocx(docx, 'handbuch.docx', extractOptions)).metadata.hiddenRuns).to.equal(0);
  });

  it('keeps the text mammoth does not read: simple fields, w:cr, w:dir, formulas; warns of what is still skipped', async () => {
    const edited = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        '<w:p><w:r><w:t xml:space="preserve">Abbildung </w:t></w:r><w:fldSimple w:instr=" SEQ Abbildung \\* ARABIC "><w:r><w:t>1</w:t></w:r></w:fldSimple><w:r><w:t>: Prozessübersicht</w:t></w:r></w:p>' +
          '<w:p><w:fldSimple w:instr=" IF x > 1 &quot;a&quot; "><w:r><w:t>Müller GmbH</w:t></w:r></w:fldSimple></w:p>' +
          '<w:p><w:r><w:t>Zeile eins</w:t><w:cr/><w:t>Zeile zwei</w:t></w:r></w:p>' +
          '<w:p><w:r><w:t xml:space="preserve">Formel: </w:t></w:r><m:oMathPara><m:oMath><m:r><m:t>E=mc</m:t></m:r><m:sSup><m:e/><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath></m:oMathPara></w:p>' +
          '<w:p><w:dir w:val="rtl"><w:r><w:t>Text in w:dir</w:t></w:r></w:dir></w:p>' +
          '<w:altChunk r:id="rIdChunk"/>',
      ),
    });
    const result = await extractDocx(edited, 'fields.docx', extractOptions);
    for (const text of [
      'Abbildung 1: Prozessübersicht',
      'Müller GmbH',
      'Zeile eins\nZeile zwei',
      'Formel: E=mc2',
      'Text in w:dir',
    ])
      expect(result.text).to.contain(text);
    expect(result.warnings).to.deep.equal([
      'An unrecognised element was ignored: w:altChunk: its text is not extracted',
    ]);
  });

  it('keeps SmartArt texts, image descriptions, column breaks and words apart in cells; drops empty form prompts', async () => {
    const p = (inner: string) => `<w:p>${inner}</w:p>`;
    const t = (text: string) => `<w:r><w:t xml:space="preserve">${text}</w:t></w:r>`;
    const smartArt =
      '<w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/diagram"><dgm:relIds xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" r:dm="rIdDgm" r:lo="rIdLo" r:qs="rIdQs" r:cs="rIdCs"/></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>';
    const data =
      '<?xml version="1.0"?><dgm:dataModel xmlns:dgm="http://schemas.openxmlformats.org/drawingml/2006/diagram" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><dgm:ptLst>' +
      '<dgm:pt modelId="0" type="doc"><dgm:t><a:p><a:r><a:t>Dokument</a:t></a:r></a:p></dgm:t></dgm:pt>' +
      ['Planen', 'Durchführen', 'Überprüfen']
        .map(
          (x, i) =>
            `<dgm:pt modelId="${i + 1}"><dgm:t><a:bodyPr/><a:p><a:r><a:t>${x}</a:t></a:r></a:p></dgm:t></dgm:pt>`,
        )
        .join('') +
      '</dgm:ptLst></dgm:dataModel>';
    const placeholder =
      '<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent><w:r><w:t>Klicken oder tippen Sie hier, um Text einzugeben.</w:t></w:r></w:sdtContent></w:sdt>';
    // filled in (w:val="0"), and a control without properties that holds a placeholder: their text stays
    const filled =
      '<w:sdt><w:sdtPr><w:showingPlcHdr w:val="0"/></w:sdtPr><w:sdtContent><w:r><w:t>Maria Schneider</w:t></w:r></w:sdtContent></w:sdt>';
    const outer = `<w:sdt><w:sdtContent><w:r><w:t xml:space="preserve">Bleibt </w:t></w:r>${placeholder}</w:sdtContent></w:sdt>`;
    const cell = (inner: string) => `<w:tc>${inner}</w:tc>`;
    const heading = (text: string) => `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr>${t(text)}</w:p>`;
    const edited = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        p(t('Der Zyklus:')) +
          p(smartArt) +
          p(`${t('Vor Spalte')}<w:r><w:br w:type="column"/></w:r>${t('Nach Spalte')}`) +
          p(`${t('Name: ')}${placeholder}`) +
          p(`${t('Leitung: ')}${filled}`) +
          p(outer) +
          `<w:tbl><w:tr>${cell(heading('Modul') + heading('Einführung'))}${cell(p(t('Dauer')))}</w:tr></w:tbl>`,
      ),
      'word/_rels/document.xml.rels': (old) =>
        old.replace(
          '</Relationships>',
          '<Relationship Id="rIdDgm" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/diagramData" Target="diagrams/data1.xml"/></Relationships>',
        ),
      'word/diagrams/data1.xml': data,
    });
    const result = await extractDocx(edited, 'kreis.docx', extractOptions);
    expect(result.text).to.contain('Der Zyklus:\n\nPlanen\nDurchführen\nÜberprüfen');
    expect(result.text).to.not.contain('Dokument');
    expect(result.text).to.contain('Vor Spalte\nNach Spalte');
    expect(result.text).to.not.contain('Klicken oder tippen');
    expect(result.text).to.contain('Leitung: Maria Schneider').and.contain('Bleibt');
    expect(result.text).to.match(/Name:/);
    expect(result.text).to.contain('Modul Einführung | Dauer');
    // an image's description is text (Word's "Alternativtext")
    const picture =
      '<w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:docPr id="7" name="Bild 1" descr="Ablaufdiagramm der Prüfung"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:blipFill><a:blip r:embed="rIdBild"/></pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>';
    const image = await extractDocx(
      editPackage(docx, {
        'word/document.xml': insertIntoBody(p(t('Siehe:') + picture)),
        'word/_rels/document.xml.rels': (old) =>
          old.replace(
            '</Relationships>',
            '<Relationship Id="rIdBild" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/bild.png"/></Relationships>',
          ),
      }),
      'bild.docx',
      extractOptions,
    );
    expect(image.text).to.contain('Siehe: [Bild: Ablaufdiagramm der Prüfung]');
  });

  it('takes a style based on a heading style, or with an outline level, for a heading', async () => {
    const para = (text: string, style: string) =>
      `<w:p><w:pPr><w:pStyle w:val="${style}"/></w:pPr><w:r><w:t>${text}</w:t></w:r></w:p>`;
    const edited = editPackage(docx, {
      'word/styles.xml': (old) =>
        old.replace(
          '</w:styles>',
          '<w:style w:type="paragraph" w:styleId="Kapitel"><w:name w:val="Kapitel"/><w:basedOn w:val="Heading1"/></w:style>' +
            '<w:style w:type="paragraph" w:styleId="Abschnitt"><w:name w:val="Abschnitt"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>' +
            '<w:style w:type="paragraph" w:styleId="Hinweis"><w:name w:val="Hinweis"/><w:basedOn w:val="Normal"/></w:style></w:styles>',
        ),
      'word/document.xml': insertIntoBody(
        para('Kapitel Zwei', 'Kapitel') +
          para('Aufbau der Prüfung', 'Abschnitt') +
          para('Nur ein Hinweis.', 'Hinweis'),
      ),
    });
    const result = await extractDocx(edited, 'stile.docx', extractOptions);
    const headings = headingsOf(result);
    expect(headings).to.deep.include.members([
      ['Kapitel Zwei', 1],
      ['Aufbau der Prüfung', 2],
    ]);
    expect(blockTexts(result, 'paragraph')).to.include('Nur ein Hinweis.');
  });

  it("takes a paragraph's own outline level over its style's, and not one a tracked change took away", async () => {
    const para = (text: string, properties: string) =>
      `<w:p><w:pPr>${properties}</w:pPr><w:r><w:t>${text}</w:t></w:r></w:p>`;
    const outline = (level: number) => `<w:outlineLvl w:val="${level}"/>`;
    const earlier = (properties: string) =>
      `<w:pPrChange w:id="7" w:author="Prüfer" w:date="2026-11-30T10:00:00Z"><w:pPr>${properties}</w:pPr></w:pPrChange>`;
    const edited = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        para('Grundlagen der Moderation', outline(0)) +
          para('Rollen im Workshop', `<w:pStyle w:val="Normal"/>${outline(1)}`) +
          para('Vorbereitung', `${outline(2)}${earlier(outline(5))}`) +
          para('Kein Kapitel mehr', earlier(outline(0))) +
          para('Nur hervorgehoben', `<w:pStyle w:val="Heading1"/>${outline(9)}`) +
          para('Tief gegliedert', outline(7)),
      ),
    });
    const result = await extractDocx(edited, 'gliederung.docx', extractOptions);
    const headings = headingsOf(result);
    expect(headings).to.deep.include.members([
      ['Grundlagen der Moderation', 1],
      ['Rollen im Workshop', 2],
      ['Vorbereitung', 3],
      ['Tief gegliedert', 6],
    ]);
    const paragraphs = blockTexts(result, 'paragraph');
    expect(paragraphs).to.include('Kein Kapitel mehr');
    expect(paragraphs).to.include('Nur hervorgehoben');
    expect(result.warnings).to.deep.equal([]);
  });

  it("reads outline levels as a paragraph's own in the document part only, not in a style's properties", () => {
    const styles =
      '<w:styles><w:style w:type="paragraph" w:styleId="Kapitel"><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style></w:styles>';
    expect(rewriteForMammoth(styles)).to.equal(styles);
    const body = '<w:body><w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:p></w:body>';
    expect(rewriteForMammoth(body, { drawingTexts: () => undefined })).to.equal(
      '<w:body><w:p><w:pPr><w:pStyle w:val="CpeOutline1"/><w:outlineLvl w:val="0"/></w:pPr></w:p></w:body>',
    );
  });

  it('keeps the numbers Word shows before numbered headings and list items', async () => {
    const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
    const lvl = (ilvl: number, text: string, format = 'decimal', extra = '') =>
      `<w:lvl w:ilvl="${ilvl}"><w:start w:val="1"/><w:numFmt w:val="${format}"/><w:lvlText w:val="${text}"/>${extra}</w:lvl>`;
    const numbering =
      `<?xml version="1.0"?><w:numbering ${W}>` +
      `<w:abstractNum w:abstractNumId="10">${lvl(0, '%1')}${lvl(1, '%1.%2')}</w:abstractNum>` +
      `<w:abstractNum w:abstractNumId="11">${lvl(0, 'Schritt %1:')}${lvl(1, '%2)', 'lowerLetter')}</w:abstractNum>` +
      `<w:abstractNum w:abstractNumId="12">${lvl(0, '•', 'bullet')}</w:abstractNum>` +
      '<w:num w:numId="21"><w:abstractNumId w:val="10"/></w:num><w:num w:numId="22"><w:abstractNumId w:val="11"/></w:num>' +
      '<w:num w:numId="23"><w:abstractNumId w:val="12"/></w:num>' +
      '<w:num w:numId="24"><w:abstractNumId w:val="11"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>' +
      '<w:num w:numId="25"><w:abstractNumId w:val="11"/></w:num>' +
      '</w:numbering>';
    const styles = (old: string) =>
      old.replace(
        '</w:styles>',
        '<w:style w:type="paragraph" w:styleId="Kap1"><w:name w:val="Kapitel 1"/><w:basedOn w:val="Heading1"/><w:pPr><w:numPr><w:numId w:val="21"/></w:numPr></w:pPr></w:style>' +
          '<w:style w:type="paragraph" w:styleId="Kap2"><w:name w:val="Kapitel 2"/><w:basedOn w:val="Heading2"/><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="21"/></w:numPr></w:pPr></w:style></w:styles>',
      );
    const styled = (text: string, style: string) =>
      `<w:p><w:pPr><w:pStyle w:val="${style}"/></w:pPr><w:r><w:t>${text}</w:t></w:r></w:p>`;
    const item = (text: string, numId: number, ilvl = 0) =>
      `<w:p><w:pPr><w:numPr><w:ilvl w:val="${ilvl}"/><w:numId w:val="${numId}"/></w:numPr></w:pPr><w:r><w:t>${text}</w:t></w:r></w:p>`;
    const edited = editPackage(docx, {
      'word/numbering.xml': numbering,
      'word/styles.xml': styles,
      'word/document.xml': insertIntoBody(
        styled('Einleitung', 'Kap1') +
          styled('Ziele', 'Kap2') +
          item('Auftrag klären.', 22) +
          item('Mit dem Team', 22, 1) +
          item('Rollen verteilen.', 22).replace(
            '</w:numPr></w:pPr>',
            '</w:numPr><w:pPrChange w:id="1" w:author="A"><w:pPr><w:ind w:left="0"/></w:pPr></w:pPrChange></w:pPr>',
          ) +
          item('Punkt ohne Nummer', 23) +
          styled('Praxis', 'Kap1') +
          styled('Übungen', 'Kap2') +
          item('Weiter ab fünf.', 24) +
          // another instance of the same list definition counts on
          item('Und sechs.', 25) +
          // an item deleted with changes tracked (its paragraph mark too) is no item: it does not count
          item('', 25).replace(
            '</w:numPr></w:pPr><w:r><w:t></w:t></w:r>',
            '</w:numPr><w:rPr><w:del w:id="3" w:author="A" w:date="2024-01-01T00:00:00Z"/></w:rPr></w:pPr><w:del w:id="4" w:author="A" w:date="2024-01-01T00:00:00Z"><w:r><w:delText>Gestrichen</w:delText></w:r></w:del>',
          ) +
          // a text box as Word writes it: for itself (mc:Choice) and for older readers (mc:Fallback)
          `<w:p><w:r><mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><mc:Choice Requires="wps"><w:txbxContent>${item('Im Kasten', 25)}</w:txbxContent></mc:Choice><mc:Fallback><w:pict><v:textbox xmlns:v="urn:schemas-microsoft-com:vml"><w:txbxContent>${item('Im Kasten', 25)}</w:txbxContent></v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>`,
      ),
    });
    const result = await extractDocx(edited, 'nummern.docx', extractOptions);
    const headings = blockTexts(result, 'heading');
    expect(headings).to.include.members(['1 Einleitung', '1.1 Ziele', '2 Praxis', '2.1 Übungen']);
    expect(blockTexts(result, 'list_item')).to.include.members([
      'Schritt 1: Auftrag klären.',
      'a) Mit dem Team',
      'Schritt 2: Rollen verteilen.',
      'Punkt ohne Nummer',
      'Schritt 5: Weiter ab fünf.',
      'Schritt 6: Und sechs.',
    ]);
    expect(result.text).to.contain('Schritt 7: Im Kasten').and.not.contain('Schritt 8');
  });

  it('reads only the parts relationships reach: an XML part nothing refers to is never inflated', async () => {
    const entries: RawEntry[] = Object.entries(unzipSync(docx)).map(([name, data]) => ({
      name,
      data,
      method: 0,
      declaredSize: data.length,
    }));
    // a deflate stream that cannot be inflated: reading it would fail the document
    entries.push({
      name: 'word/unused.xml',
      data: new Uint8Array([0xff, 0xff, 0xff]),
      method: 8,
      declaredSize: 10,
    });
    const result = await extractDocx(buildZip(entries), 'padded.docx', extractOptions);
    expect(result.text).to.contain('Die Größe der Änderung ist überschaubar.');
  });

  it('keeps table columns under merged cells and the labels of notes referenced from a cell', async () => {
    const W =
      'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
    const T = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/';
    const rels = (body: string) =>
      `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${body}</Relationships>`;
    const p = (text: string) => `<w:p><w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;
    const tc = (text: string, pr = '') => `<w:tc>${pr ? `<w:tcPr>${pr}</w:tcPr>` : ''}${p(text)}</w:tc>`;
    const row = (...cells: string[]) => `<w:tr>${cells.join('')}</w:tr>`;
    const table =
      '<w:tbl>' +
      row(tc('Phase'), tc('Schritt'), tc('Inhalt')) +
      row(tc('Planung', '<w:vMerge w:val="restart"/>'), tc('1'), tc('Ziele klären')) +
      row(tc('', '<w:vMerge/>'), tc('2'), tc('Rollen verteilen')) +
      row(tc('Zusammenfassung', '<w:gridSpan w:val="2"/>'), tc('Ende')) +
      row(
        tc('Fußnote'),
        '<w:tc><w:p><w:r><w:t>In der Zelle</w:t></w:r><w:r><w:footnoteReference w:id="2"/></w:r></w:p></w:tc>',
        tc('x'),
      ) +
      '</w:tbl>';
    const bytes = zipSync({
      '[Content_Types].xml': strToU8(
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/></Types>',
      ),
      '_rels/.rels': strToU8(
        rels(`<Relationship Id="rId1" Type="${T}officeDocument" Target="word/document.xml"/>`),
      ),
      'word/_rels/document.xml.rels': strToU8(
        rels(`<Relationship Id="rId2" Type="${T}footnotes" Target="footnotes.xml"/>`),
      ),
      'word/document.xml': strToU8(`<w:document ${W}><w:body>${table}</w:body></w:document>`),
      'word/footnotes.xml': strToU8(
        `<w:footnotes ${W}><w:footnote w:id="2"><w:p><w:r><w:t>Zweite Fußnote.</w:t></w:r></w:p></w:footnote></w:footnotes>`,
      ),
    });
    const result = await extractDocx(bytes, 'merged.docx', extractOptions);
    expect(blockTexts(result, 'table')).to.deep.equal([
      [
        'Phase | Schritt | Inhalt',
        'Planung | 1 | Ziele klären',
        ' | 2 | Rollen verteilen',
        'Zusammenfassung |  | Ende',
        'Fußnote | In der Zelle[1] | x',
      ].join('\n'),
    ]);
    expect(result.text).to.contain('[1] Zweite Fußnote.');
  });

  it('keeps the text of a text box', async () => {
    const edited = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        '<w:p><w:r><w:pict><v:shape><v:textbox><w:txbxContent><w:p><w:r><w:t>Text im Textfeld</w:t></w:r></w:p></w:txbxContent></v:textbox></v:shape></w:pict></w:r></w:p>',
      ),
    });
    expect((await extractDocx(edited, 'box.docx', extractOptions)).text).to.contain('Text im Textfeld');
  });

  it('never resolves an external entity in document.xml', async () => {
    const target = existsSync('/etc/hostname') ? '/etc/hostname' : '/etc/passwd';
    const secret = readFileSync(target, 'utf8').trim().split('\n')[0]!;
    const edited = editPackage(docx, {
      'word/document.xml': (old) =>
        insertIntoBody('<w:p><w:r><w:t>Geheim: [&xxe;]</w:t></w:r></w:p>')(old).replace(
          '<w:document',
          `<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file://${target}">]><w:document`,
        ),
    });
    const result = await extractDocx(edited, 'xxe.docx', extractOptions);
    expect(result.text).to.contain('Geheim: []');
    expect(result.text).not.to.contain(secret);
  });

  it('counts embedded objects without opening them', async () => {
    const edited = editPackage(docx, { 'word/embeddings/oleObject1.bin': 'PK not really a nested document' });
    const result = await extractDocx(edited, 'embedded.docx', extractOptions);
    expect(result.metadata.embeddedObjects).to.equal(1);
    expect(result.warnings.join(' ')).to.contain('embedded object');
    expect(result.text).to.contain('Einführung');
  });

  it('stops a document.xml that inflates beyond its declared size', async () => {
    const files = unzipSync(docx);
    const entries: RawEntry[] = Object.entries(files).map(([name, data]) =>
      name === 'word/document.xml'
        ? { name, data: zerosDeflate(100), method: 8, declaredSize: data.length }
        : { name, data, method: 0, declaredSize: data.length },
    );
    await extractError(buildZip(entries), ErrorCodes.ARCHIVE_BOMB);
  });

  it('refuses more pages than allowed, and a file over the size limit with its size and the limit', async () => {
    await extractError(docx, ErrorCodes.TOO_MANY_PAGES, { ...extractOptions, maxPages: 1 });
    const tooLarge = await extractError(docx, ErrorCodes.FILE_TOO_LARGE, {
      ...extractOptions,
      maxFileBytes: 100,
    });
    expect(tooLarge.details).to.deep.equal({ size: docx.length, limit: 100 });
  });

  it('reports a broken document.xml as CORRUPT_FILE', async () => {
    const edited = editPackage(docx, { 'word/document.xml': '<w:document xmlns:w="x"><w:body><w:p>' });
    expect((await extractError(edited, ErrorCodes.CORRUPT_FILE)).message).to.equal(
      'test.docx: cannot read Word document: malformed XML in word/document.xml: elements left open at the end: w:document,w:body,w:p',
    );
    // in words, on one line: not xmldom's "warning: [xmldom warning]\tunclosed xml attribute\n@#[line:...]"
    const unclosed = editPackage(docx, {
      'word/document.xml': (old) => old.replace('<w:body>', '<w:body><w:p w:rsidR="00A1>'),
    });
    const error = await extractError(unclosed, ErrorCodes.CORRUPT_FILE);
    expect(error.message).to.match(
      /cannot read Word document: malformed XML in word\/document\.xml: .*\(line \d+\)$/,
    );
    expect(error.message).to.not.match(/[\t\n]|xmldom/);
    const deep = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        `${'<w:sdt><w:sdtContent>'.repeat(3000)}${'</w:sdtContent></w:sdt>'.repeat(3000)}`,
      ),
    });
    expect((await extractError(deep, ErrorCodes.CORRUPT_FILE)).message).to.contain('nested too deeply');
  });

  it('keeps notes and images when their parts use single quotes or another prefix, as mammoth reads them', async () => {
    const footnote = '[1] Quelle: ISO 9001, Abschnitt 4.1';
    const singleIds = editPackage(docx, {
      'word/footnotes.xml': (old) => old.replace(/w:id="([^"]*)"/g, "w:id='$1'"),
    });
    expect(blockTexts(await extractDocx(singleIds, 'a.docx', extractOptions), 'footnote')).to.deep.equal([
      footnote,
    ]);
    const W_NS = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
    const otherPrefix = editPackage(docx, {
      'word/footnotes.xml': (old) =>
        old
          .replace(/<(\/?)w:/g, '<$1x:')
          .replace(/ w:(?!\w+=")/g, ' x:')
          .replace(/ w:id=/g, ' x:id=')
          .replace(`xmlns:w="${W_NS}"`, `xmlns:w="${W_NS}" xmlns:x="${W_NS}"`),
    });
    expect(blockTexts(await extractDocx(otherPrefix, 'b.docx', extractOptions), 'footnote')).to.deep.equal([
      footnote,
    ]);
    // relationships written with single quotes: the image they name is there, with its description
    const png = Uint8Array.from(
      Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
        'base64',
      ),
    );
    const image =
      '<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:docPr id="1" name="Bild" descr="Ein Diagramm"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:blipFill><a:blip r:embed="rIdBild"/></pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>';
    const singleRels = editPackage(docx, {
      'word/document.xml': insertIntoBody(image),
      'word/media/bild.png': png,
      'word/_rels/document.xml.rels': (old) =>
        old
          .replace(
            '</Relationships>',
            '<Relationship Id="rIdBild" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/bild.png"/></Relationships>',
          )
          .replace(/="([^"]*)"/g, "='$1'"),
      '[Content_Types].xml': (old) =>
        old.includes('Extension="png"')
          ? old
          : old.replace('</Types>', '<Default Extension="png" ContentType="image/png"/></Types>'),
    });
    const withImage = await extractDocx(singleRels, 'c.docx', extractOptions);
    expect(withImage.text).to.contain('[Bild: Ein Diagramm]');
    expect(blockTexts(withImage, 'footnote')).to.deep.equal([footnote]);
  });

  it('reads headers as the body: a text box once, tabs to a position, no prompt, nothing moved away', async () => {
    const run = (text: string) => `<w:r><w:t xml:space="preserve">${text}</w:t></w:r>`;
    const box = (text: string) =>
      `<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><wps:txbx><w:txbxContent><w:p>${run(text)}</w:p></w:txbxContent></wps:txbx></w:drawing></mc:Choice><mc:Fallback><w:pict><v:textbox><w:txbxContent><w:p>${run(text)}</w:p></w:txbxContent></v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r>`;
    const header = (old: string) =>
      old.replace(
        /<w:p\b[\s\S]*<\/w:p>/,
        `<w:p>${run('Kopf')}${box('Logo-Text')}</w:p>` +
          `<w:p>${run('Firma')}<w:r><w:ptab w:relativeTo="margin" w:alignment="right" w:leader="none"/></w:r>${run('Seite')}</w:p>` +
          `<w:p>${run('A')}<w:r><w:noBreakHyphen/></w:r>${run('B')}<w:moveFrom w:id="1" w:author="x" w:date="2024-01-01T00:00:00Z">${run('WEG')}</w:moveFrom></w:p>` +
          '<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent><w:p><w:r><w:t>[Titel des Dokuments]</w:t></w:r></w:p></w:sdtContent></w:sdt>',
      );
    const edited = editPackage(docx, {
      'word/header1.xml': header,
      'word/document.xml': insertIntoBody(
        `<w:p>${run('Links')}<w:r><w:ptab w:relativeTo="margin" w:alignment="right" w:leader="none"/></w:r>${run('Rechts')}</w:p>`,
      ),
    });
    const result = await extractDocx(edited, 'kopf.docx', extractOptions);
    expect(result.metadata.headers).to.deep.equal(['Kopf\nLogo-Text\nFirma\tSeite\nA\u2011B']);
    expect(result.text).to.contain('Links\tRechts');
  });

  it('drops content controls showing their prompt in one pass: an empty cell for a cell, nothing of real content', () => {
    const run = (text: string) => `<w:r><w:t>${text}</w:t></w:r>`;
    const prompt = (content: string) =>
      `<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent>${content}</w:sdtContent></w:sdt>`;
    // a control with an empty w:sdtPr/ around real content and an inner control showing its prompt
    const nested = `<w:sdt><w:sdtPr/><w:sdtContent><w:p>${run('Wichtiger Inhalt')}</w:p>${prompt(`<w:p>${run('Prompt')}</w:p>`)}</w:sdtContent></w:sdt>`;
    const kept = rewriteForMammoth(nested);
    expect(kept).to.contain('Wichtiger Inhalt').and.not.contain('Prompt');
    // a control around a table cell: the cell stays, empty, so the columns do not shift
    const row = `<w:tr>${prompt(`<w:tc><w:p>${run('Wert eingeben')}</w:p></w:tc>`)}<w:tc><w:p>${run('42')}</w:p></w:tc></w:tr>`;
    expect(rewriteForMammoth(row)).to.equal(
      `<w:tr><w:tc><w:p/></w:tc><w:tc><w:p>${run('42')}</w:p></w:tc></w:tr>`,
    );
    const time = (n: number) => {
      const deep = `${'<w:sdt><w:sdtPr/><w:sdtContent>'.repeat(n)}${prompt(run('x'))}${'</w:sdtContent></w:sdt>'.repeat(n)}`;
      const started = performance.now();
      expect(rewriteForMammoth(deep)).to.not.contain('<w:t>x</w:t>');
      return performance.now() - started;
    };
    time(1000);
    // a search per control made 30,000 nested controls take 28 s
    expect(time(30_000)).to.be.below(Math.max(1000, 8 * time(7_500)));
  });

  it('reads the body when a part beside it is damaged (notes, styles, relationships), with a warning naming the part', async () => {
    const cut = (old: string) => old.replace(/<\/w:footnotes>\s*$/, '<w:footnote w:id="9"><w:p>');
    const edited = editPackage(docx, {
      '[Content_Types].xml': (old) => `${old}<Types>`,
      'word/footnotes.xml': cut,
      'word/styles.xml': (old) =>
        old.replace('<w:style ', '<w:style w:type="paragraph ').replace(/<\/w:styles>\s*$/, ''),
    });
    const result = await extractDocx(edited, 'fussnoten.docx', extractOptions);
    expect(result.text).to.contain('Die Größe der Änderung ist überschaubar.');
    expect(result.text).to.not.contain('Quelle: ISO 9001');
    const damaged = result.warnings.filter((w) => w.includes('not read: malformed XML'));
    expect(damaged.map((w) => w.split(' ')[0]).sort()).to.deep.equal([
      '[Content_Types].xml',
      'word/footnotes.xml',
      'word/styles.xml',
    ]);
    // a reference to a note the notes part does not define (mammoth stopped on it: "reading 'type'")
    const dangling = editPackage(docx, {
      'word/document.xml': insertIntoBody(
        '<w:p><w:r><w:t>Verweis ins Leere</w:t></w:r><w:r><w:footnoteReference w:id="77"/></w:r></w:p>',
      ),
    });
    const read = await extractDocx(dangling, 'verweis.docx', extractOptions);
    expect(read.text).to.contain('Verweis ins Leere');
    expect(read.text).to.contain('Quelle: ISO 9001');
    // a hyperlink and an image whose relationships are not there, a table style without a styles part
    const image =
      '<w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:docPr id="1" name="Bild" descr="Ein Diagramm"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:blipFill><a:blip r:embed="rIdFehlt"/></pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>';
    const unresolved = editPackage(docx, {
      'word/document.xml': (old) =>
        insertIntoBody(
          `<w:p><w:hyperlink r:id="rIdWeg"><w:r><w:t>Linktext bleibt</w:t></w:r></w:hyperlink>${image}</w:p>`,
        )(old).replace(/<w:tblPr>/, '<w:tblPr><w:tblStyle w:val="LightGrid-Accent1"/>'),
      'word/styles.xml': null,
    });
    const resolved = await extractDocx(unresolved, 'ohne-ziele.docx', extractOptions);
    expect(resolved.text).to.contain('Linktext bleibt');
    expect(resolved.text).to.contain('Audit | Prüfung');
    // entries of the content types and relationships without what mammoth reads of them (PartName, Target)
    const incomplete = editPackage(docx, {
      '[Content_Types].xml': (old) => old.replace('<Override PartName=', '<Override Name='),
      'word/_rels/document.xml.rels': (old) =>
        old.replace(
          '</Relationships>',
          '<Relationship Id="rIdOhneZiel" Type="x/hyperlink"/></Relationships>',
        ),
      'word/document.xml': insertIntoBody(
        '<w:p><w:hyperlink r:id="rIdOhneZiel"><w:r><w:t>Verweis ohne Ziel</w:t></w:r></w:hyperlink></w:p>',
      ),
    });
    const entries = await extractDocx(incomplete, 'eintraege.docx', extractOptions);
    expect(entries.text).to.contain('Verweis ohne Ziel');
    expect(entries.text).to.contain('Quelle: ISO 9001'); // the notes too: no last try was needed
    expect(entries.warnings.filter((w) => w.includes('not read'))).to.deep.equal([]);
    // well-formed, and still mammoth stops (notes in a namespace it does not know): the body alone, with a warning
    const foreign = editPackage(docx, {
      'word/footnotes.xml': (old) =>
        old.replace(
          /xmlns:w="http:\/\/schemas.openxmlformats.org\/wordprocessingml\/2006\/main"/,
          'xmlns:w="urn:fremd"',
        ),
    });
    const bodyAlone = await extractDocx(foreign, 'fremd.docx', extractOptions);
    expect(bodyAlone.text).to.contain('Die Größe der Änderung ist überschaubar.');
    expect(bodyAlone.warnings.join('\n')).to.match(
      /^notes, hyperlinks and images not read: the body alone could be read \(mammoth: .+\)$/m,
    );
    // the same with a damaged part beside it, which is not what stops mammoth: repaired, and the body alone
    const both = editPackage(foreign, { 'docProps/app.xml': (old) => old.slice(0, old.length - 20) });
    const repairedToo = await extractDocx(both, 'beides.docx', extractOptions);
    expect(repairedToo.text).to.contain('Die Größe der Änderung ist überschaubar.');
    expect(repairedToo.warnings.map((w) => w.split(':')[0])).to.include.members([
      'docProps/app.xml not read',
      'notes, hyperlinks and images not read',
    ]);
    // damaged relationships of the body: what they link is not read (styles, notes), the body is
    const unlinked = editPackage(docx, { 'word/_rels/document.xml.rels': (old) => old.slice(0, 200) });
    const body = await extractDocx(unlinked, 'verknuepfungen.docx', extractOptions);
    expect(body.text).to.contain('Die Größe der Änderung ist überschaubar.');
    expect(
      body.warnings.filter((w) => w.startsWith('word/_rels/document.xml.rels not read: ')),
    ).to.have.length(1);
  });

  it('gives an empty success for a document without text', async () => {
    const edited = editPackage(docx, {
      'word/document.xml': (old) => old.replace(/<w:body>[\s\S]*<w:sectPr/, '<w:body><w:sectPr'),
    });
    const result = await extractDocx(edited, 'leer.docx', extractOptions);
    expect(result.text).to.equal('');
    expect(result.blocks).to.have.length(0);
    expect(result.pages).to.have.length(1);
  });
});
