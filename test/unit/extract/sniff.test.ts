import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { strToU8, unzipSync, zipSync } from 'fflate';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { readCfbNames, sniffFormat, validateBytes, validateFile } from '../../../src/extract/sniff.js';
import {
  buildCfb,
  buildZip,
  makeDocx,
  makePptx,
  renameMainPart,
  stored,
  zerosDeflate,
} from './office-fixtures.js';

function sniffError(bytes: Uint8Array, ext: string, code: string, text?: string): CpeError {
  try {
    sniffFormat(bytes, ext, `datei.${ext}`);
  } catch (error) {
    expect(error).to.be.instanceOf(CpeError);
    const e = error as CpeError;
    expect(e.code, e.message).to.equal(code);
    expect(e.message).to.contain(`datei.${ext}`);
    if (text) expect(e.message).to.contain(text);
    return e;
  }
  expect.fail(`expected ${code}`);
}

const pdf = strToU8('%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n');

describe('extract/sniff', () => {
  let docx: Uint8Array;
  let pptx: Uint8Array;
  before(async () => {
    docx = await makeDocx();
    pptx = await makePptx(1);
  });

  it('accepts real DOCX, PPTX, PDF, Markdown and text by content', () => {
    expect(sniffFormat(docx, '.docx', 'a.docx').format).to.equal('docx');
    expect(sniffFormat(pptx, 'PPTX', 'a.pptx').format).to.equal('pptx');
    expect(sniffFormat(pdf, 'pdf', 'a.pdf').format).to.equal('pdf');
    expect(sniffFormat(strToU8('# Überschrift\n\nText'), 'md', 'a.md').format).to.equal('md');
    expect(sniffFormat(strToU8('Grüße aus Köln'), 'txt', 'a.txt').format).to.equal('txt');
  });

  it('reports empty files, unsupported and legacy extensions', () => {
    for (const ext of ['pdf', 'docx', 'pptx', 'md', 'txt'])
      sniffError(new Uint8Array(0), ext, ErrorCodes.FILE_EMPTY, 'empty file');
    sniffError(strToU8('x'), 'xlsx', ErrorCodes.UNSUPPORTED_FORMAT, '.xlsx');
    sniffError(strToU8('x'), 'doc', ErrorCodes.LEGACY_FORMAT, 'legacy binary');
  });

  it('tells an encrypted OOXML container from a legacy binary document', () => {
    sniffError(
      buildCfb(['EncryptionInfo', 'EncryptedPackage']),
      'docx',
      ErrorCodes.ENCRYPTED_DOCUMENT,
      'password protected',
    );
    sniffError(buildCfb(['EncryptedPackage']), 'pptx', ErrorCodes.ENCRYPTED_DOCUMENT);
    sniffError(buildCfb(['WordDocument', '1Table']), 'docx', ErrorCodes.LEGACY_FORMAT, '.doc/.ppt');
    sniffError(buildCfb(['PowerPoint Document']), 'pptx', ErrorCodes.LEGACY_FORMAT);
  });

  it('reads the CFB directory bounds-safely: cycles end, truncation is corruption', () => {
    expect(readCfbNames(buildCfb(['EncryptedPackage'], { cyclicDirectory: true }))).to.include(
      'EncryptedPackage',
    );
    sniffError(buildCfb(['WordDocument']).subarray(0, 700), 'docx', ErrorCodes.CORRUPT_FILE, 'OLE2');
  });

  it('rejects a ZIP without the main part and a PDF named like an Office file', () => {
    const empty = zipSync({});
    sniffError(empty, 'docx', ErrorCodes.FORMAT_MISMATCH, 'not a Word document (word/document.xml missing)');
    sniffError(docx, 'pptx', ErrorCodes.FORMAT_MISMATCH, 'ppt/presentation.xml missing');
    sniffError(pdf, 'pptx', ErrorCodes.FORMAT_MISMATCH, 'file is a PDF, not a PowerPoint document');
    sniffError(pdf, 'docx', ErrorCodes.FORMAT_MISMATCH, 'file is a PDF, not a Word document');
    sniffError(strToU8('just text'), 'docx', ErrorCodes.FORMAT_MISMATCH, 'not a Word document');
    sniffError(docx.subarray(0, 200), 'docx', ErrorCodes.CORRUPT_FILE, 'truncated or corrupt ZIP');
  });

  it('accepts a package whose main part has another name, by the content type the package gives it', () => {
    const wordOnline = renameMainPart(docx, 'word/document.xml', 'word/document2.xml');
    expect(sniffFormat(wordOnline, 'docx', 'online.docx').format).to.equal('docx');
    const renamedDeck = renameMainPart(pptx, 'ppt/presentation.xml', 'ppt/presentation2.xml');
    expect(sniffFormat(renamedDeck, 'pptx', 'folien.pptx').format).to.equal('pptx');
    // the other kind's main part, or one the content types name but the package does not hold
    const mismatch = sniffError(
      wordOnline,
      'pptx',
      ErrorCodes.FORMAT_MISMATCH,
      'ppt/presentation.xml missing',
    );
    expect(mismatch.details?.looksLike).to.equal('docx');
    const gone = zipSync({ '[Content_Types].xml': unzipSync(wordOnline)['[Content_Types].xml']! });
    sniffError(gone, 'docx', ErrorCodes.FORMAT_MISMATCH, 'word/document.xml missing');
  });

  it('finds %PDF after junk within 1024 bytes, and not later', () => {
    const junk = (n: number) => new Uint8Array([...new Uint8Array(n).fill(0x20), ...pdf]);
    expect(sniffFormat(junk(500), 'pdf', 'j.pdf').format).to.equal('pdf');
    sniffError(junk(2000), 'pdf', ErrorCodes.FORMAT_MISMATCH, 'no %PDF header');
    sniffError(docx, 'pdf', ErrorCodes.FORMAT_MISMATCH, 'ZIP');
  });

  it('lets UTF-16 text through and rejects binary content named .txt/.md', () => {
    const text = 'Hallo Welt, schöne Grüße';
    const le = new Uint8Array(text.length * 2);
    for (let i = 0; i < text.length; i++) new DataView(le.buffer).setUint16(i * 2, text.charCodeAt(i), true);
    expect(sniffFormat(le, 'txt', 'le.txt').format).to.equal('txt');
    expect(sniffFormat(new Uint8Array([0xff, 0xfe, ...le]), 'txt', 'bom.txt').format).to.equal('txt');
    sniffError(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a]), 'md', ErrorCodes.FORMAT_MISMATCH, 'PNG');
    sniffError(pdf, 'txt', ErrorCodes.FORMAT_MISMATCH, 'PDF');
    const binary = new Uint8Array(4096);
    for (let i = 0; i < binary.length; i++) binary[i] = (i * 7919) % 251 === 0 ? 0 : (i * 31) % 256;
    binary.fill(0, 100, 140);
    sniffError(binary, 'txt', ErrorCodes.FORMAT_MISMATCH, 'NUL');
  });

  it("reads text that starts like a binary format's magic as text, and a PDF written in ASCII as a PDF", () => {
    for (const text of ['%PDF/A-Konformität: Hinweise zur Archivierung\n', 'GIF89a ist ein Bildformat.\n']) {
      expect(sniffFormat(Buffer.from(text), 'txt', 'hinweis.txt').format).to.equal('txt');
      expect(sniffFormat(Buffer.from(text), 'md', 'hinweis.md').format).to.equal('md');
    }
    sniffError(
      Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n'),
      'txt',
      ErrorCodes.FORMAT_MISMATCH,
      'PDF',
    );
    sniffError(Buffer.from('GIF89a\x10\x00\x10\x00'), 'md', ErrorCodes.FORMAT_MISMATCH, 'GIF');
  });

  describe('validateFile', () => {
    let dir: string;
    const options = {
      maxFileBytes: 1024 * 1024,
      maxUnzippedBytes: 10 * 1024 * 1024,
      maxCompressionRatio: 200,
    };
    before(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'cpe-sniff-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    const write = (name: string, bytes: Uint8Array): string => {
      const file = path.join(dir, name);
      writeFileSync(file, bytes);
      return file;
    };
    async function validateError(file: string, code: string, opts = options): Promise<CpeError> {
      try {
        await validateFile(file, opts);
      } catch (error) {
        expect((error as CpeError).code, (error as Error).message).to.equal(code);
        expect((error as Error).message).to.contain(file);
        return error as CpeError;
      }
      return expect.fail(`expected ${code}`);
    }

    it('returns format and size of a good file', async () => {
      const file = write('gut.docx', docx);
      expect(await validateFile(file, options)).to.deep.equal({ format: 'docx', size: docx.length });
    });

    it('reports unreadable, too large, empty and mismatched files', async () => {
      await validateError(path.join(dir, 'fehlt.pdf'), ErrorCodes.FILE_UNREADABLE);
      await validateError(dir, ErrorCodes.FILE_UNREADABLE);
      await validateError(write('gross.pdf', pdf), ErrorCodes.FILE_TOO_LARGE, {
        ...options,
        maxFileBytes: 10,
      });
      await validateError(write('leer.txt', new Uint8Array(0)), ErrorCodes.FILE_EMPTY);
      await validateError(write('bild.xyz', pdf), ErrorCodes.UNSUPPORTED_FORMAT);
      await validateError(write('pdf.pptx', pdf), ErrorCodes.FORMAT_MISMATCH);
      await validateError(
        write('geheim.docx', buildCfb(['EncryptedPackage'])),
        ErrorCodes.ENCRYPTED_DOCUMENT,
      );
    });

    it('validateBytes checks bytes in memory as validateFile checks the file, naming the file', async () => {
      const cases: Array<[string, Uint8Array, typeof options]> = [
        ['gut.docx', docx, options],
        ['gross.pdf', pdf, { ...options, maxFileBytes: 10 }],
        ['leer.txt', new Uint8Array(0), options],
        ['bild.xyz', pdf, options],
        ['pdf.pptx', pdf, options],
        ['geheim.docx', buildCfb(['EncryptedPackage']), options],
      ];
      const outcome = async (check: () => unknown) => {
        try {
          return { ok: await check() };
        } catch (error) {
          return { code: (error as CpeError).code, message: (error as Error).message };
        }
      };
      for (const [name, bytes, opts] of cases) {
        const file = write(name, bytes);
        expect(await outcome(() => validateBytes(bytes, file, opts)), name).to.deep.equal(
          await outcome(() => validateFile(file, opts)),
        );
      }
    });

    it('finds a decompression bomb from the central directory alone', async () => {
      const bomb = buildZip([
        stored('[Content_Types].xml', '<Types/>'),
        stored('word/document.xml', '<w:document/>'),
        { name: 'word/media/zeros.bin', data: zerosDeflate(200), method: 8, declaredSize: 200 << 20 },
      ]);
      await validateError(write('bombe.docx', bomb), ErrorCodes.ARCHIVE_BOMB);
    });
  });
});
