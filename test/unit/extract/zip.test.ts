import { crc32 } from 'node:zlib';
import { expect } from 'chai';
import { deflateSync, strToU8, zipSync } from 'fflate';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { inspectZip, openZip } from '../../../src/extract/zip.js';
import { buildZip, limits, stored, zerosDeflate } from './office-fixtures.js';

function expectError(fn: () => unknown, code: string, text?: string): CpeError {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(CpeError);
    const e = error as CpeError;
    expect(e.code).to.equal(code);
    if (text) expect(e.message).to.contain(text);
    return e;
  }
  expect.fail(`expected ${code}`);
}

describe('extract/zip', () => {
  it('reads stored and deflated entries, strips a UTF-8 BOM and finds names case-insensitively', () => {
    const bytes = zipSync({
      'word/document.xml': [strToU8('\uFEFF<w:document>Grüße</w:document>'), { level: 9 }],
      'docProps/core.xml': [strToU8('<core/>'), { level: 0 }],
    });
    const zip = openZip(bytes, 'a.docx', limits);
    expect(zip.names()).to.have.members(['word/document.xml', 'docProps/core.xml']);
    expect(zip.readText('word/document.xml')).to.equal('<w:document>Grüße</w:document>');
    expect(zip.readText('/DOCPROPS/Core.xml')).to.equal('<core/>');
    expect(zip.has('word/missing.xml')).to.equal(false);
    expect(zip.readBytes('docProps/core.xml')).to.deep.equal(strToU8('<core/>'));
  });

  it('decodes UTF-16 parts by their BOM', () => {
    const text = '<a>Öl</a>';
    const utf16 = new Uint8Array(2 + text.length * 2);
    utf16.set([0xff, 0xfe]);
    for (let i = 0; i < text.length; i++)
      new DataView(utf16.buffer).setUint16(2 + i * 2, text.charCodeAt(i), true);
    const zip = openZip(
      buildZip([{ name: 'x.xml', data: utf16, method: 0, declaredSize: utf16.length }]),
      'u.docx',
      limits,
    );
    expect(zip.readText('x.xml')).to.equal(text);
  });

  it('decodes parts in the encoding their XML declaration names (ISO-8859-1, windows-1252)', () => {
    const latin1 = Uint8Array.from(
      Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?><w:t>Grüße aus Köln, Straße</w:t>', 'latin1'),
    );
    const cp1252 = Uint8Array.from(
      Buffer.concat([
        Buffer.from("<?xml version='1.0' encoding='windows-1252'?><t>"),
        Buffer.from([0x80, 0x84, 0x93]),
        Buffer.from('</t>'),
      ]),
    );
    const zip = openZip(
      zipSync({
        'l.xml': latin1,
        'c.xml': cp1252,
        'u.xml': strToU8('<?xml version="1.0" encoding="UTF-8"?><t>ü</t>'),
      }),
      'x.docx',
      limits,
    );
    expect(zip.readText('l.xml')).to.equal(
      '<?xml version="1.0" encoding="UTF-8"?><w:t>Grüße aus Köln, Straße</w:t>',
    );
    expect(zip.readText('c.xml')).to.equal("<?xml version='1.0' encoding='UTF-8'?><t>€„“</t>");
    expect(zip.readText('u.xml')).to.equal('<?xml version="1.0" encoding="UTF-8"?><t>ü</t>');
  });

  it('reports a truncated archive as CORRUPT_FILE naming the file', () => {
    const bytes = zipSync({ 'a.xml': strToU8('<a/>'.repeat(100)) });
    const error = expectError(
      () => openZip(bytes.subarray(0, bytes.length - 30), 'kaputt.docx', limits),
      ErrorCodes.CORRUPT_FILE,
      'truncated or corrupt ZIP container',
    );
    expect(error.message).to.contain('kaputt.docx');
  });

  it('reports random bytes and a broken deflate stream as CORRUPT_FILE', () => {
    expectError(() => openZip(new Uint8Array(100).fill(7), 'r.docx', limits), ErrorCodes.CORRUPT_FILE);
    const junk = new Uint8Array(64).fill(0xff);
    const zip = openZip(
      buildZip([{ name: 'a.xml', data: junk, method: 8, declaredSize: 100 }]),
      'j.docx',
      limits,
    );
    expectError(() => zip.readBytes('a.xml'), ErrorCodes.CORRUPT_FILE, 'a.xml');
  });

  it('rejects an entry that honestly declares 200 MB of zeros before inflating anything', () => {
    const data = zerosDeflate(200);
    expect(data.length).to.be.below(300 * 1024);
    const bytes = buildZip([
      stored('word/document.xml', '<d/>'),
      { name: 'bomb.bin', data, method: 8, declaredSize: 200 << 20 },
    ]);
    expectError(
      () => openZip(bytes, 'bomb.docx', { ...limits, maxUnzippedBytes: 500 << 20 }),
      ErrorCodes.ARCHIVE_BOMB,
      'bomb.bin',
    );
    expectError(
      () => inspectZip(bytes, 'bomb.docx', limits),
      ErrorCodes.ARCHIVE_BOMB,
      'declared uncompressed size',
    );
  });

  it('stops a lying entry (declares 4 KB, inflates to 200 MB) while inflating', () => {
    const bytes = buildZip([
      { name: 'word/document.xml', data: zerosDeflate(200), method: 8, declaredSize: 4096 },
    ]);
    const zip = openZip(bytes, 'liar.docx', limits);
    expectError(
      () => zip.readBytes('word/document.xml'),
      ErrorCodes.ARCHIVE_BOMB,
      'beyond its declared 4096 bytes',
    );
    expect(zip.inflatedBytes).to.equal(0);
  });

  it('reports an entry that inflates to a different size than declared, without a bomb ratio, as CORRUPT_FILE', () => {
    const data = deflateSync(strToU8('<a>'.repeat(1000)));
    const bigger = openZip(
      buildZip([{ name: 'a.xml', data, method: 8, declaredSize: 100 }]),
      'm.docx',
      limits,
    );
    expectError(
      () => bigger.readBytes('a.xml'),
      ErrorCodes.CORRUPT_FILE,
      'inflated to 3000 bytes, 100 declared',
    );
    const smaller = openZip(
      buildZip([{ name: 'a.xml', data, method: 8, declaredSize: 5000 }]),
      'm.docx',
      limits,
    );
    expectError(() => smaller.readBytes('a.xml'), ErrorCodes.CORRUPT_FILE, '5000 declared');
  });

  it('reports an entry whose bytes do not match their CRC-32 (damage that still inflates) as CORRUPT_FILE', () => {
    const text = strToU8('<w:t>Gefahrstoffe richtig lagern</w:t>');
    const honest = openZip(
      buildZip([{ name: 'a.xml', data: text, method: 0, declaredSize: text.length }]),
      'c.docx',
      limits,
    );
    expect(honest.readText('a.xml')).to.equal('<w:t>Gefahrstoffe richtig lagern</w:t>');
    const damaged = text.slice();
    damaged[10] ^= 0x20; // 'e' -> 'E': the same size, a different text
    for (const [data, method] of [
      [damaged, 0],
      [deflateSync(damaged), 8],
    ] as const) {
      const zip = openZip(
        buildZip([{ name: 'a.xml', data, method, declaredSize: text.length, crc32: crc32(text) }]),
        'c.docx',
        limits,
      );
      expectError(
        () => zip.readBytes('a.xml'),
        ErrorCodes.CORRUPT_FILE,
        'c.docx: truncated or corrupt ZIP container (entry a.xml does not match its CRC-32 checksum)',
      );
    }
  });

  it('enforces the total budget across entries while inflating', () => {
    const part = deflateSync(new Uint8Array(600 * 1024));
    const bytes = buildZip([
      { name: 'a.bin', data: part, method: 8, declaredSize: 600 * 1024 },
      { name: 'b.bin', data: part, method: 8, declaredSize: 600 * 1024 },
    ]);
    // declared total 1.2 MB fits a 2 MB budget; after reading a, b no longer fits 1 MB
    const zip = openZip(bytes, 'two.docx', { ...limits, maxUnzippedBytes: 2 << 20 });
    expect(zip.readBytes('a.bin').length).to.equal(600 * 1024);
    expect(() => openZip(bytes, 'two.docx', { ...limits, maxUnzippedBytes: 1 << 20 })).to.throw(
      /decompression bomb/,
    );
  });

  it('refuses entries that share or overlap their data (a bomb made of references)', () => {
    const bytes = buildZip([
      stored('word/document.xml', '<a>eins</a>'),
      stored('word/pad.xml', '<a>zwei</a>'),
    ]);
    // the second central directory entry made to point at the first local entry
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let central = -1;
    for (let i = bytes.length - 22; i >= 0; i--)
      if (view.getUint32(i, true) === 0x02014b50) {
        central = i;
        break;
      }
    view.setUint32(central + 42, 0, true);
    expectError(() => openZip(bytes, 'x.docx', limits), ErrorCodes.ARCHIVE_BOMB, 'overlap');
    // entries one after the other, as every writer makes them, are fine
    expect(openZip(zipSync({ a: strToU8('1'), b: strToU8('2') }), 'ok.docx', limits).names()).to.have.length(
      2,
    );
  });

  it('limits the number of entries', () => {
    const files: Record<string, Uint8Array> = {};
    for (let i = 0; i < 20; i++) files[`f${i}.xml`] = strToU8('<a/>');
    expectError(
      () => openZip(zipSync(files), 'many.docx', { ...limits, maxEntries: 10 }),
      ErrorCodes.ARCHIVE_BOMB,
      '20 entries',
    );
  });

  it('reports ZIP-level encryption as ENCRYPTED_DOCUMENT', () => {
    const bytes = buildZip([{ ...stored('word/document.xml', '<d/>'), encrypted: true }]);
    expectError(
      () => openZip(bytes, 'enc.docx', limits).readText('word/document.xml'),
      ErrorCodes.ENCRYPTED_DOCUMENT,
    );
  });

  it('copes with data prepended to the archive', () => {
    const bytes = buildZip([stored('a.xml', '<a>ok</a>')], new Uint8Array(100).fill(1));
    expect(openZip(bytes, 'sfx.docx', limits).readText('a.xml')).to.equal('<a>ok</a>');
  });

  it('reports a central directory that points outside the file as CORRUPT_FILE', () => {
    const bytes = buildZip([stored('a.xml', '<a/>')]);
    new DataView(bytes.buffer).setUint32(bytes.length - 6, 0x7ffffff0, true); // cd offset
    expectError(() => openZip(bytes, 'off.docx', limits), ErrorCodes.CORRUPT_FILE);
  });
});
