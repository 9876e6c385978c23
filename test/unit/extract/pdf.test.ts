import { expect } from 'chai';
import { ErrorCodes, FileError } from '../../../src/errors.js';
import { extractPdf } from '../../../src/extract/pdf.js';
import { defaultExtractOptions, type ExtractedDocument } from '../../../src/extract/types.js';
import { germanHandbookPdf, handWrittenPdf, makePng, renderPdf, softHyphenPdf } from './pdf-fixtures.js';

const blockTexts = (doc: ExtractedDocument, type: string) =>
  doc.blocks
    .filter((b) => b.type === type)
    .map((b) => ({ text: doc.text.slice(b.start, b.end), level: b.level, page: b.page }));

async function rejection(promise: Promise<unknown>): Promise<FileError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(FileError);
    return error as FileError;
  }
  throw new Error('expected the extraction to fail');
}

describe('extract/pdf', function () {
  this.timeout(60000);
  let handbook: ExtractedDocument;

  before(async () => {
    handbook = await extractPdf(await germanHandbookPdf(), 'handbuch.pdf', defaultExtractOptions);
  });

  it('reads German text from standard (non-embedded) fonts with correct umlauts', () => {
    expect(handbook.text).to.include('Größere Änderungen');
    expect(handbook.text).to.include('werden geprüft und übernommen.');
    expect(handbook.text).to.equal(handbook.text.normalize('NFC'));
  });

  it('joins a word hyphenated at a line end but keeps a suspended hyphen', () => {
    expect(handbook.text).to.include('Qualitätssicherung in der Ausbildung');
    expect(handbook.text).not.to.include('Qualitäts-');
    expect(handbook.text).to.include('Lehr-\nund Lernmittel');
  });

  it('joins words at soft hyphens (which pdf.js leaves out of its text) and across a page break', async () => {
    const doc = await extractPdf(
      softHyphenPdf([
        [
          'Die Verant\xad',
          'wortung liegt bei der Zu\xad',
          'ständigkeit des Teams. Die Lehr-',
          'und Lernmittel. Die Qualitäts-',
        ],
        ['sicherung beginnt beim Wareneingang.'],
      ]),
      'weich.pdf',
      defaultExtractOptions,
    );
    expect(doc.text).to.include('Die Verantwortung liegt bei der Zuständigkeit des Teams.');
    expect(doc.text).to.include('Lehr-\nund Lernmittel');
    expect(doc.text).to.include('Die Qualitätssicherung');
    expect(doc.text).to.not.include('\u00AD');
    // the word moved to the page where it begins; the next page starts after it
    const second = doc.pages[1]!;
    expect(doc.text.slice(second.start, second.end)).to.equal('beginnt beim Wareneingang.');
  });

  it('finds numbered headings with their level and page, and paragraphs between them', () => {
    expect(blockTexts(handbook, 'heading')).to.deep.equal([
      { text: '1 Einleitung', level: 1, page: 1 },
      { text: '1.1 Grundlagen der Prüfung', level: 2, page: 2 },
    ]);
    const paragraphs = blockTexts(handbook, 'paragraph');
    expect(paragraphs).to.have.length(3);
    expect(paragraphs[1]!.text.startsWith('Der zweite Absatz')).to.equal(true);
  });

  it('keeps every page, marks the image-only page as needing OCR and counts its image', () => {
    expect(handbook.pages.map((p) => p.number)).to.deep.equal([1, 2, 3]);
    const scan = handbook.pages[2]!;
    expect(scan.metadata).to.include({ images: 1, ocrNeeded: true });
    expect(scan.start).to.equal(scan.end);
    expect(handbook.pages[0]!.metadata.ocrNeeded).to.equal(undefined);
    expect(handbook.ocrNeeded).to.equal(true);
    expect(handbook.metadata.title).to.equal('Handbuch Qualität');
    expect(handbook.metadata.pageCount).to.equal(3);
  });

  it('gives page offsets that cut the text into the pages', () => {
    const first = handbook.pages[0]!;
    expect(handbook.text.slice(first.start, first.end)).to.match(/^1 Einleitung[\s\S]*für die Übungen\.$/);
    const second = handbook.pages[1]!;
    expect(handbook.text.slice(second.start, second.end)).to.equal(
      '1.1 Grundlagen der Prüfung\n\nDie Prüfung besteht aus drei Teilen.',
    );
  });

  it('leaves out running headers, footers and page numbers; a word hyphenated over a page break is whole', async () => {
    const bytes = await renderPdf((doc) => {
      for (let page = 1; page <= 4; page++) {
        doc.addPage();
        doc.font('Helvetica').fontSize(9).text('Handbuch Qualitätssicherung', 50, 30, { lineBreak: false });
        // page 3 goes on with the word page 2 ends in
        doc.fontSize(11).text(page === 3 ? 'sicherung der Ergebnisse.' : `Aufgabe ${page * 2}`, 50, 80, {
          lineBreak: false,
        });
        doc.text(`Der Text der Seite ${page} beschreibt die Prüfung.`, 50, 110, { lineBreak: false });
        doc.text(page === 2 ? 'Am Ende steht die Qualitäts-' : 'Am Ende steht ein Satz.', 50, 124, {
          lineBreak: false,
        });
        doc.fontSize(9).text(`Seite ${page} von 4`, 50, 780, { lineBreak: false });
      }
    });
    const doc = await extractPdf(bytes, 'kopf.pdf', defaultExtractOptions);
    // the running header once (content that repeats may be content), no page numbers
    expect(doc.text.match(/Handbuch Qualitätssicherung/g)).to.have.length(1);
    expect(doc.text).to.not.match(/Seite \d von 4/);
    // numbers that do not follow the pages are no page numbers
    for (const n of [2, 4, 8]) expect(doc.text).to.contain(`Aufgabe ${n}`);
    expect(doc.text).to.contain('Am Ende steht die Qualitätssicherung');
    expect(doc.metadata.pageFurniture).to.deep.equal(['Handbuch Qualitätssicherung', 'Seite 1 von 4']);
  });

  it('leaves out a footer whose page numbers jump at a chapter; the word hyphenated over it is whole', async () => {
    // page 5 opens the second chapter without a number: pages 1-4 print 1-4, pages 6-9 print 5-8
    const bytes = await renderPdf((doc) => {
      for (let page = 1; page <= 9; page++) {
        doc.addPage();
        const name = 'ABCDEFGHI'[page - 1];
        const first =
          page === 8 ? 'ativity. And indeed, that is its motive.' : `Absatz ${name} beginnt die Seite.`;
        const last = page === 7 ? 'This change protects commercial cre-' : `Absatz ${name} beendet sie.`;
        doc.font('Helvetica').fontSize(11).text(first, 50, 80, { lineBreak: false });
        doc.text(last, 50, 110, { lineBreak: false });
        if (page !== 5)
          doc.fontSize(9).text(`${page < 5 ? page : page - 1} FREE CULTURE`, 50, 780, { lineBreak: false });
      }
    });
    const doc = await extractPdf(bytes, 'kapitel-seiten.pdf', defaultExtractOptions);
    expect(doc.text).to.not.match(/FREE CULTURE/);
    expect(doc.text).to.contain('This change protects commercial creativity.');
    expect(doc.metadata.pageFurniture).to.deep.equal(['1 FREE CULTURE']);
  });

  it('uses the outline (bookmarks) for headings when present', async () => {
    const bytes = await renderPdf((doc) => {
      doc.addPage();
      doc.font('Helvetica').fontSize(11).text('Kapitel Anfang', 50, 60, { lineBreak: false });
      doc.text('Erster Text des Kapitels.', 50, 100, { lineBreak: false });
      const chapter = doc.outline.addItem('Kapitel Anfang');
      doc.addPage();
      doc.text('Ein Abschnitt', 50, 60, { lineBreak: false });
      doc.text('Text im Abschnitt.', 50, 100, { lineBreak: false });
      chapter.addItem('Ein Abschnitt');
    });
    const doc = await extractPdf(bytes, 'outline.pdf', defaultExtractOptions);
    expect(blockTexts(doc, 'heading')).to.deep.equal([
      { text: 'Kapitel Anfang', level: 1, page: 1 },
      { text: 'Ein Abschnitt', level: 2, page: 2 },
    ]);
    expect(doc.metadata.outline).to.deep.equal([
      { title: 'Kapitel Anfang', level: 1, page: 1 },
      { title: 'Ein Abschnitt', level: 2, page: 2 },
    ]);
  });

  it('joins a heading wrapped at a hyphen, in its text and against the outline; hyphens on line after line', async () => {
    const bytes = await renderPdf((doc) => {
      doc.addPage();
      doc.font('Helvetica').fontSize(11).text('Grundlagen der Qualitäts-', 50, 60, { lineBreak: false });
      doc.text('sicherung im Betrieb', 50, 74, { lineBreak: false });
      doc.text('Die Mess-', 50, 110, { lineBreak: false });
      doc.text('geräte-', 50, 124, { lineBreak: false });
      doc.text('hersteller liefern. Ein-', 50, 138, { lineBreak: false });
      doc.text('u. Ausgänge sind belegt.', 50, 152, { lineBreak: false });
      doc.outline.addItem('Grundlagen der Qualitätssicherung im Betrieb');
    });
    const doc = await extractPdf(bytes, 'trennung.pdf', defaultExtractOptions);
    expect(blockTexts(doc, 'heading')).to.deep.equal([
      { text: 'Grundlagen der Qualitätssicherung im Betrieb', level: 1, page: 1 },
    ]);
    expect(doc.text).to.contain('Die Messgerätehersteller liefern. Ein-\nu. Ausgänge sind belegt.');
  });

  it('finds headings by their look where the outline names them differently than the page prints them', async () => {
    const bytes = await renderPdf((doc) => {
      doc.addPage();
      doc.font('Helvetica').fontSize(11).text('Vorwort', 50, 60, { lineBreak: false });
      doc.text('Ein kurzes Vorwort.', 50, 90, { lineBreak: false });
      doc.outline.addItem('Vorwort');
      doc.font('Helvetica-Bold').fontSize(18).text('KAPITEL EINS: Grundlagen', 50, 140, { lineBreak: false });
      doc.font('Helvetica').fontSize(11).text('Text über die Grundlagen.', 50, 180, { lineBreak: false });
      doc.outline.addItem('Kapitel 1: Grundlagen');
      doc.addPage();
      doc.font('Helvetica-Bold').fontSize(18).text('KAPITEL ZWEI: Praxis', 50, 60, { lineBreak: false });
      doc.font('Helvetica').fontSize(11).text('Text über die Praxis.', 50, 100, { lineBreak: false });
      doc.outline.addItem('Kapitel 2: Praxis');
    });
    const doc = await extractPdf(bytes, 'kapitel.pdf', defaultExtractOptions);
    expect(blockTexts(doc, 'heading').map((h) => h.text)).to.deep.equal([
      'Vorwort',
      'KAPITEL EINS: Grundlagen',
      'KAPITEL ZWEI: Praxis',
    ]);
  });

  it('does not make ordinary numbered sentences headings', async () => {
    const bytes = await renderPdf((doc) => {
      doc.addPage();
      doc.font('Helvetica').fontSize(11);
      doc.text('3 Teilnehmer haben die Prüfung bestanden', 50, 60, { lineBreak: false });
      doc.text('Die übrigen wiederholen sie im Mai.', 50, 100, { lineBreak: false });
    });
    const doc = await extractPdf(bytes, 'plain.pdf', defaultExtractOptions);
    expect(blockTexts(doc, 'heading')).to.deep.equal([]);
  });

  it('notes images on pages that also have text, without marking them for OCR', async () => {
    const bytes = await renderPdf((doc) => {
      doc.addPage();
      doc.font('Helvetica').fontSize(11).text('Abbildung 1 zeigt den Aufbau.', 50, 60, { lineBreak: false });
      doc.image(makePng(120, 120), 50, 100, { width: 200 });
      doc.image(makePng(16, 16), 300, 100, { width: 16 }); // an icon, not content
    });
    const doc = await extractPdf(bytes, 'figure.pdf', defaultExtractOptions);
    expect(doc.pages[0]!.metadata).to.include({ images: 1 });
    expect(doc.pages[0]!.metadata.ocrNeeded).to.equal(undefined);
    expect(doc.ocrNeeded).to.equal(false);
    // a scanned page with a page number set on it has no text layer worth the name: OCR is needed
    const stamped = await renderPdf((d) => {
      d.addPage();
      d.image(makePng(120, 120), 0, 0, { width: 595 });
      d.font('Helvetica').fontSize(9).text('Seite 1', 280, 760, { lineBreak: false });
    });
    const scan = await extractPdf(stamped, 'scan.pdf', defaultExtractOptions);
    expect(scan.pages[0]!.metadata).to.include({ images: 1, ocrNeeded: true });
  });

  it('succeeds with empty text on a blank page', async () => {
    const doc = await extractPdf(await renderPdf((d) => d.addPage()), 'blank.pdf', defaultExtractOptions);
    expect(doc.text).to.equal('');
    expect(doc.pages).to.have.length(1);
    expect(doc.ocrNeeded).to.equal(false);
  });

  it('opens a file encrypted with an owner password only and records its permissions', async () => {
    const bytes = await renderPdf(
      (doc) => {
        doc.addPage();
        doc.font('Helvetica').fontSize(11).text('Vertraulicher Inhalt', 50, 60, { lineBreak: false });
      },
      { ownerPassword: 'geheim', permissions: { printing: 'highResolution', copying: false } },
    );
    const doc = await extractPdf(bytes, 'owner.pdf', defaultExtractOptions);
    expect(doc.text).to.equal('Vertraulicher Inhalt');
    expect(doc.metadata.encrypted).to.equal(true);
    expect(doc.metadata.permissions).to.include({ copy: false, print: true });
  });

  it('fails with "password required" when a user password is set', async () => {
    const bytes = await renderPdf(
      (doc) => {
        doc.addPage();
        doc.text('Nur mit Passwort', 50, 60);
      },
      { userPassword: 'abc', ownerPassword: 'abc' },
    );
    const error = await rejection(extractPdf(bytes, 'locked.pdf', defaultExtractOptions));
    expect(error.code).to.equal(ErrorCodes.PASSWORD_REQUIRED);
    expect(error.message).to.equal('locked.pdf: password required');
  });

  it('reports encryption with a security handler other than Standard as an encrypted document, naming it', async () => {
    const encrypted = (dictionary: string) =>
      handWrittenPdf('BT /F1 24 Tf 72 720 Td (geheim) Tj ET', {
        extra: [dictionary],
        trailer:
          '/Encrypt 6 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>] ',
      });
    const certificate = encrypted(
      '<< /Filter /Adobe.PubSec /SubFilter /adbe.pkcs7.s5 /V 4 /R 4 /Length 128 /CF << /DefaultCryptFilter << /CFM /AESV2 /Recipients [<3082>] >> >> /StmF /DefaultCryptFilter /StrF /DefaultCryptFilter >>',
    );
    const error = await rejection(extractPdf(certificate, 'zertifikat.pdf', defaultExtractOptions));
    expect(error.code).to.equal(ErrorCodes.ENCRYPTED_DOCUMENT);
    expect(error.message).to.equal(
      'zertifikat.pdf: encrypted PDF (security handler Adobe.PubSec is not supported)',
    );
    const drm = await rejection(
      extractPdf(encrypted('<< /Filter /FOPN_foweb /V 1 /R 2 >>'), 'drm.pdf', defaultExtractOptions),
    );
    expect(drm.code).to.equal(ErrorCodes.ENCRYPTED_DOCUMENT);
    expect(drm.message).to.equal('drm.pdf: encrypted PDF (security handler FOPN_foweb is not supported)');
    const algorithm = await rejection(
      extractPdf(encrypted('<< /Filter /Standard /V 3 /R 3 >>'), 'v3.pdf', defaultExtractOptions),
    );
    expect(algorithm.code).to.equal(ErrorCodes.ENCRYPTED_DOCUMENT);
    expect(algorithm.message).to.equal('v3.pdf: encrypted PDF (its encryption method is not supported)');
  });

  it('fails a PDF none of whose page text pdf.js can parse, instead of an empty text', async () => {
    // 20,000 nested arrays overflow pdf.js's content parser before the text
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)} TJ`;
    const bytes = handWrittenPdf(`BT /F1 12 Tf 72 720 Td ${deep} (Rollen in der Auftragsklaerung) Tj ET`);
    const error = await rejection(extractPdf(bytes, 'tief.pdf', defaultExtractOptions));
    expect(error.code).to.equal(ErrorCodes.CORRUPT_FILE);
    expect(error.message).to.match(
      /^tief\.pdf: corrupt PDF: the text of its pages cannot be read \(page 1: RangeError: Maximum call stack/,
    );
  });

  it('keeps the text read before a parse error on a page, with a warning naming the page', async () => {
    const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)} TJ`;
    const bytes = handWrittenPdf(
      `BT /F1 12 Tf 72 720 Td (Rollen im Team) Tj 0 -20 Td ${deep} (danach) Tj ET`,
    );
    const doc = await extractPdf(bytes, 'halb.pdf', defaultExtractOptions);
    expect(doc.text).to.equal('Rollen im Team');
    expect(doc.warnings).to.have.length(1);
    expect(doc.warnings[0]).to.match(/^page 1: text read up to an error \(RangeError: Maximum call stack/);
  });

  it('refuses more pages than maxPages', async () => {
    const bytes = await renderPdf((doc) => {
      for (let i = 1; i <= 4; i++) doc.addPage().text(`Seite ${i}`, 50, 60);
    });
    const error = await rejection(extractPdf(bytes, 'long.pdf', { ...defaultExtractOptions, maxPages: 3 }));
    expect(error.code).to.equal(ErrorCodes.TOO_MANY_PAGES);
    expect(error.message).to.equal('long.pdf: too many pages (4, limit 3)');
  });

  it('reports garbage behind a PDF header as a corrupt file, naming the file', async () => {
    const bytes = new TextEncoder().encode(`%PDF-1.7\n${'garbage '.repeat(50)}`);
    const error = await rejection(extractPdf(bytes, 'kaputt.pdf', defaultExtractOptions));
    expect(error.code).to.equal(ErrorCodes.CORRUPT_FILE);
    expect(error.message).to.match(/^kaputt\.pdf: corrupt/);
  });

  it('reports an empty file as empty', async () => {
    const error = await rejection(extractPdf(new Uint8Array(0), 'leer.pdf', defaultExtractOptions));
    expect(error.code).to.equal(ErrorCodes.FILE_EMPTY);
    expect(error.message).to.equal('leer.pdf: empty file');
  });
});
