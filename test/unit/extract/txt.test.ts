import { expect } from 'chai';
import { decodeText, extractTxt } from '../../../src/extract/txt.js';

const GERMAN = 'Größe: äöü ÄÖÜ ß – „Zitat“ € 5';

function utf16(text: string, endian: 'le' | 'be', bom: boolean): Uint8Array {
  const bytes: number[] = bom ? (endian === 'le' ? [0xff, 0xfe] : [0xfe, 0xff]) : [];
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (endian === 'le') bytes.push(unit & 0xff, unit >> 8);
    else bytes.push(unit >> 8, unit & 0xff);
  }
  return new Uint8Array(bytes);
}

/** Windows-1252 bytes for the characters used in these tests. */
function cp1252(text: string): Uint8Array {
  const special: Record<string, number> = { '–': 0x96, '„': 0x84, '“': 0x93, '€': 0x80 };
  return new Uint8Array([...text].map((c) => special[c] ?? c.charCodeAt(0)));
}

describe('extract/txt decodeText', () => {
  it('reads UTF-8 without and with BOM (the BOM is not text)', () => {
    const utf8 = new TextEncoder().encode(GERMAN);
    expect(decodeText(utf8)).to.deep.equal({ text: GERMAN, encoding: 'utf-8' });
    const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8]);
    expect(decodeText(withBom)).to.deep.equal({ text: GERMAN, encoding: 'utf-8-bom' });
  });

  it('reads UTF-16 LE and BE with a BOM', () => {
    expect(decodeText(utf16(GERMAN, 'le', true))).to.deep.equal({ text: GERMAN, encoding: 'utf-16le-bom' });
    expect(decodeText(utf16(GERMAN, 'be', true))).to.deep.equal({ text: GERMAN, encoding: 'utf-16be-bom' });
  });

  it('recognises UTF-16 LE and BE without a BOM from the NUL pattern', () => {
    const text = 'Dies ist ein Test für UTF-16 ohne BOM.\nZweite Zeile.';
    expect(decodeText(utf16(text, 'le', false))).to.deep.equal({ text, encoding: 'utf-16le' });
    expect(decodeText(utf16(text, 'be', false))).to.deep.equal({ text, encoding: 'utf-16be' });
  });

  it('falls back to Latin-1 for German umlauts that are not UTF-8', () => {
    const latin1 = new Uint8Array(
      [...'Prüfung für Größe: '].map((c) => c.charCodeAt(0)).concat([0xe4, 0xf6, 0xfc, 0xdf]),
    );
    expect(decodeText(latin1)).to.deep.equal({ text: 'Prüfung für Größe: äöüß', encoding: 'iso-8859-1' });
  });

  it('reads Windows-1252 quotes, dashes and the euro sign', () => {
    expect(decodeText(cp1252(GERMAN))).to.deep.equal({ text: GERMAN, encoding: 'windows-1252' });
  });

  it('keeps UTF-8 when only the last character was cut off', () => {
    const bytes = new TextEncoder().encode('Maßnahmen für Prüfungen ä');
    const decoded = decodeText(bytes.subarray(0, bytes.length - 1));
    expect(decoded.encoding).to.equal('utf-8');
    expect(decoded.text).to.equal('Maßnahmen für Prüfungen \uFFFD');
  });
});

describe('extract/txt extractTxt', () => {
  it('splits paragraphs at blank lines and unifies CRLF line breaks', async () => {
    const doc = await extractTxt(
      cp1252('Erster Absatz\r\nzweite Zeile\r\n\r\n  \r\nZweiter Absatz äöü\r\n'),
      'a.txt',
    );
    expect(doc.text).to.equal('Erster Absatz\nzweite Zeile\n\nZweiter Absatz äöü');
    expect(doc.blocks.map((b) => [b.type, doc.text.slice(b.start, b.end)])).to.deep.equal([
      ['paragraph', 'Erster Absatz\nzweite Zeile'],
      ['paragraph', 'Zweiter Absatz äöü'],
    ]);
    expect(doc.metadata.encoding).to.equal('iso-8859-1');
    expect(doc.warnings).to.deep.equal(['not valid UTF-8: decoded as iso-8859-1']);
  });

  it('turns form feeds into logical pages', async () => {
    const doc = await extractTxt(new TextEncoder().encode('Seite eins\fSeite zwei\n\nmehr\f'), 'p.txt');
    expect(doc.pages.map((p) => [p.number, doc.text.slice(p.start, p.end)])).to.deep.equal([
      [1, 'Seite eins'],
      [2, 'Seite zwei\n\nmehr'],
    ]);
    expect(doc.blocks.map((b) => b.page)).to.deep.equal([1, 2, 2]);
  });

  it('removes control characters and normalises to NFC, nothing else', async () => {
    const doc = await extractTxt(
      new TextEncoder().encode('Pru\u0308fung\u0007 mit\u00ADtel \u200Bok'),
      'c.txt',
    );
    expect(doc.text).to.equal('Prüfung mittel ok');
  });

  it('gives an empty document for a whitespace-only file', async () => {
    const doc = await extractTxt(new TextEncoder().encode('\n \n\t\n'), 'w.txt');
    expect(doc.text).to.equal('');
    expect(doc.blocks).to.deep.equal([]);
    expect(doc.format).to.equal('txt');
  });
});
