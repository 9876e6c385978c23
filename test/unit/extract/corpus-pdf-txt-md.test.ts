/**
 * Real PDF, TXT and Markdown files from ../shared/corpus (see its MANIFEST.tsv). Skipped when the corpus is
 * not there (a user's checkout).
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { extractFile } from '../../../src/extract/extract-file.js';
import { disposeIsolatedWorkers, extractIsolated } from '../../../src/extract/isolate.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const corpus = resolve(projectRoot, '../shared/corpus');
const available = existsSync(join(corpus, 'MANIFEST.tsv'));

function requireCorpus(context: Mocha.Context): void {
  if (!available) {
    context.test?.title && console.log(`    (skipped: no corpus at ${corpus})`);
    context.skip();
  }
}

async function failureCode(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(CpeError);
    return (error as CpeError).code;
  }
  return 'OK';
}

const file = (relative: string) => join(corpus, relative);
const headings = (doc: ExtractedDocument) =>
  doc.blocks.filter((b) => b.type === 'heading').map((b) => doc.text.slice(b.start, b.end));

describe('corpus: PDF', function () {
  this.timeout(180000);
  before(function () {
    requireCorpus(this);
  });

  const scans = ['de_kreuzberg_image-only-german-pdf.pdf', 'docspell_scanner_pdf13.pdf'];
  const empty = [...scans, 'de_onlyoffice_new-de-DE-blank.pdf'];
  // its only text is the appearance of a form field (an annotation), which is not page text
  const annotationOnly = ['pdfjs_secHandler_empty-userpw.pdf'];

  // one test per file, so a slow file on a busy machine has its own time budget
  const pdfs = available ? readdirSync(file('pdf')).filter((n) => n.endsWith('.pdf')) : [];
  for (const name of pdfs) {
    it(`extracts ${name}${empty.includes(name) ? ' (no text: scan or blank page)' : ''}`, async () => {
      const doc = await extractFile(file(`pdf/${name}`));
      expect(doc.pages.length, name).to.be.greaterThan(0);
      if (empty.includes(name)) expect(doc.text.trim(), name).to.equal('');
      else if (annotationOnly.includes(name)) expect(doc.ocrNeeded, name).to.equal(false);
      else expect(doc.text.trim().length, name).to.be.greaterThan(0);
    });
  }

  it('marks scanned PDFs as needing OCR, per page and per document', async () => {
    for (const name of scans) {
      const doc = await extractFile(file(`pdf/${name}`));
      expect(doc.ocrNeeded, name).to.equal(true);
      expect(
        doc.pages.every((p) => p.metadata.ocrNeeded === true && (p.metadata.images as number) > 0),
      ).to.equal(true);
    }
    expect((await extractFile(file('pdf/de_onlyoffice_new-de-DE-blank.pdf'))).ocrNeeded).to.equal(false);
  });

  it('opens PDFs encrypted with an empty user password', async () => {
    const katalog = await extractFile(file('pdf/de_afu_TechnikFragenkatalogKlasseE.pdf'));
    expect(katalog.pages).to.have.length(50);
    expect(katalog.text).to.include('Prüfungsfragen');
    const contract = await extractFile(file('pdf/de_docspell_protected-test123_copy-no.pdf'));
    expect(contract.pages).to.have.length(13);
    expect(contract.metadata.permissions).to.include({ copy: false });
    expect(
      (await extractFile(file('pdf/pdfjs_issue7665_encrypt-indirect.pdf'))).text.length,
    ).to.be.greaterThan(0);
  });

  it('repairs broken xref tables and junk before the header', async () => {
    expect((await extractFile(file('pdf/pdfjs_xref_command_missing.pdf'))).text).to.include(
      'Reduced test-case',
    );
    expect((await extractFile(file('pdf/pdfjs_helloworld-bad.pdf'))).text).to.include('Hello, world!');
    expect(
      (await extractFile(file('pdf/pdfjs_issue6069_junk-before-header.pdf'))).text.length,
    ).to.be.greaterThan(10);
  });

  it('reads composed German umlauts and standard fonts', async () => {
    const umlauts = await extractFile(file('pdf/de_pdfjs_german-umlaut-r.pdf'));
    expect(umlauts.text).to.include('ü').and.to.include('ä').and.to.include('ß');
    expect(umlauts.text).to.equal(umlauts.text.normalize('NFC'));
    const fonts = await extractFile(file('pdf/pdfjs_standard_fonts.pdf'));
    expect(fonts.text).to.match(/FONT: courier/);
  });

  it('uses the outline for headings and keeps column order in a two-column paper', async () => {
    const geo = await extractFile(file('pdf/de_pysamples_GeoTopo-komprimiert.pdf'));
    expect(headings(geo)).to.include.members(['1 Topologische Grundbegriffe', '1.1 Topologische Räume']);
    const paper = await extractFile(file('pdf/pdfjs_tracemonkey_2col.pdf'));
    const intro = paper.text.indexOf('1. Introduction');
    const overview = paper.text.indexOf('2. Overview: Example Tracing Run');
    expect(intro).to.be.greaterThan(0);
    expect(overview).to.be.greaterThan(intro);
    // the left column's first paragraph continues in the same column, not across into the right one
    expect(paper.text).to.match(
      /Dynamic languages such as JavaScript, Python, and Ruby, are popular since they are expressive/,
    );
  });

  it('notes a ruled table in page metadata', async () => {
    const doc = await extractFile(file('pdf/kreuzberg_tables_tiny.pdf'));
    expect(doc.pages[0]!.metadata.tables).to.equal(1);
  });
});

describe('corpus: bad PDFs', function () {
  this.timeout(180000);
  before(function () {
    requireCorpus(this);
  });
  after(() => disposeIsolatedWorkers());

  const expected: Record<string, string[]> = {
    'pdfplumber_empty_0bytes.pdf': [ErrorCodes.FILE_EMPTY],
    'pdfjs_issue6010_1_password-abc.pdf': [ErrorCodes.PASSWORD_REQUIRED],
    'pdfjs_saslprep-r6_unicode-password.pdf': [ErrorCodes.PASSWORD_REQUIRED],
    'pdfjs_Pages-tree-refs_cycle.pdf': [ErrorCodes.CORRUPT_FILE],
    'pdfjs_bug1020226_bad-dicts.pdf': [ErrorCodes.CORRUPT_FILE],
    'pdfjs_REDHAT-1531897-0.pdf': [ErrorCodes.CORRUPT_FILE],
    'pdfjs_poppler-742-0-fuzzed.pdf': [ErrorCodes.CORRUPT_FILE],
    // best effort allowed by the manifest: the real page, or a clear error
    'pdfjs_poppler-67295-0_count-9999999999.pdf': ['OK', ErrorCodes.CORRUPT_FILE],
    'pdfjs_GHOSTSCRIPT-698804-1-fuzzed.pdf': ['OK', ErrorCodes.CORRUPT_FILE],
    'pdfjs_issue9105_other_truncated.pdf': ['OK', ErrorCodes.CORRUPT_FILE],
  };

  for (const [name, codes] of Object.entries(expected)) {
    it(`${name} -> ${codes.join(' or ')}`, async () => {
      expect(codes).to.include(await failureCode(extractIsolated(file(`bad/${name}`))));
    });
  }

  it('the /Count 9999999999 file yields its one real page', async () => {
    const doc = await extractFile(file('bad/pdfjs_poppler-67295-0_count-9999999999.pdf'));
    expect(doc.pages).to.have.length(1);
  });

  it('a PDF named .pptx is rejected by content sniffing', async () => {
    expect(await failureCode(extractIsolated(file('bad/docspell_letter-en-pdf-renamed.pptx')))).to.equal(
      ErrorCodes.FORMAT_MISMATCH,
    );
  });

  it('the JBIG2 bomb ends as a timeout or memory error of that file, within the limits', async () => {
    const code = await failureCode(
      extractIsolated(file('bad/pdfjs_bomb_giant_jbig2.pdf'), { timeoutMs: 8000 }),
    );
    expect([ErrorCodes.EXTRACTION_TIMEOUT, ErrorCodes.EXTRACTION_MEMORY]).to.include(code);
  });
});

describe('corpus: TXT and Markdown', function () {
  this.timeout(120000);
  before(function () {
    requireCorpus(this);
  });

  it('detects each text encoding', async () => {
    const latin1 = await extractFile(file('txt/de_afu_Quellen_latin1_crlf.txt'));
    expect(latin1.metadata.encoding).to.equal('iso-8859-1');
    expect(latin1.text).to.include('Nachrichten-Übertragungstechnik');
    expect(latin1.text).not.to.include('\r');
    const win = await extractFile(file('txt/tika_testTXT_win-1252.txt'));
    expect(win.metadata.encoding).to.equal('windows-1252');
    expect(win.text).to.match(/[“”]/);
    for (const name of [
      'unstructured_fake-text-utf-16-le_nobom.txt',
      'unstructured_fake-text-utf-16_bom.txt',
    ]) {
      expect((await extractFile(file(`txt/${name}`))).text, name).to.match(/^This is a test document/);
    }
    const utf8 = await extractFile(file('txt/de_kreuzberg_german-text.txt'));
    expect(utf8.text).to.include('für').and.to.include('enthält');
    const blank = await extractFile(file('txt/unstructured_fake-text-all-whitespace.txt'));
    expect(blank.text).to.equal('');
  });

  it('reads Latin-1 Markdown and tiny files', async () => {
    const latin1 = await extractFile(file('md/de_unstructured_umlauts-non-utf8.md'));
    expect(headings(latin1)).to.deep.equal(['können']);
    expect(latin1.text).to.include('äöüß');
    const tiny = await extractFile(file('md/de_afu_Checkliste_Kursstart_7bytes.md'));
    expect(tiny.text).to.equal('*todo*');
  });

  it('reads law Markdown: front matter title, § headings, numbered lists', async () => {
    const doc = await extractFile(file('md/de_gesetze_nachwg.md'));
    expect(doc.metadata.title).to.match(/^Gesetz über den Nachweis der für ein Arbeitsverhältnis/);
    expect((doc.metadata.frontMatter as Record<string, unknown>).jurabk).to.equal('NachwG');
    expect(headings(doc)).to.include('§ 1 Anwendungsbereich');
    expect(
      doc.blocks.some((b) => b.type === 'list_item' && doc.text.slice(b.start, b.end).startsWith('1.')),
    ).to.equal(true);
    expect(doc.text).not.to.include('layout: default');
  });

  it('reads Quarto chapters without callout fences and every Markdown file without error', async () => {
    const chapter = await extractFile(file('md/de_pro4bib_sicherheit.md'));
    expect(chapter.text).not.to.match(/^:::/m);
    expect(chapter.text).to.include('Dieses Kapitel soll für die Themen IT-Sicherheit');
    expect(headings(chapter)[0]).to.equal('Datenschutz & Sicherheit');
    for (const name of readdirSync(file('md'))) {
      const doc = await extractFile(file(`md/${name}`));
      expect(doc.format, name).to.equal('md');
    }
    const bgb = await extractFile(file('md/de_gesetze_bgb_1.5MB.md'));
    expect(headings(bgb).length).to.be.greaterThan(2000);
  });
});
