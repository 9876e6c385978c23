import { expect } from 'chai';
import { extractMarkdown, markdownHeldInsteadOfText } from '../../../src/extract/markdown.js';
import {
  decodeText,
  decodeWindows1252,
  extractTxt,
  heldInsteadOfText,
  noTextReason,
} from '../../../src/extract/txt.js';
import { defaultExtractOptions } from '../../../src/extract/types.js';

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

  it('recognises UTF-16 without a BOM in Cyrillic text, whose NULs are only in spaces and punctuation', () => {
    const text = 'Безопасность на складе: правила, обучение и ответственность. Вторая строка, 2026.';
    expect(decodeText(utf16(text, 'le', false))).to.deep.equal({ text, encoding: 'utf-16le' });
    expect(decodeText(utf16(text, 'be', false))).to.deep.equal({ text, encoding: 'utf-16be' });
  });

  it('reads UTF-8 with a stray Windows-1252 line as UTF-8, only the stray bytes as Windows-1252', () => {
    const utf8 = Buffer.from('Grüße aus München: Übung für Größen.\n'.repeat(20));
    const stray = Buffer.from(
      [...'Bärbel sagt: „Schön“\n'].map((c) => (c === '„' ? 0x84 : c === '“' ? 0x93 : c.charCodeAt(0))),
    );
    const decoded = decodeText(Buffer.concat([utf8, stray, utf8]));
    expect(decoded.text).to.equal(`${utf8}Bärbel sagt: „Schön“\n${utf8}`);
    expect(decoded.encoding).to.equal('utf-8');
    expect(decoded.warning).to.equal(
      'not valid UTF-8 in 4 bytes: decoded as windows-1252 there, the rest as UTF-8',
    );
  });

  it('falls back to Latin-1 for German umlauts that are not UTF-8', () => {
    const latin1 = new Uint8Array(
      [...'Prüfung für Größe: '].map((c) => c.charCodeAt(0)).concat([0xe4, 0xf6, 0xfc, 0xdf]),
    );
    expect(decodeText(latin1)).to.deep.equal({
      text: 'Prüfung für Größe: äöüß',
      encoding: 'iso-8859-1',
      warning: 'not valid UTF-8: decoded as iso-8859-1',
    });
  });

  it('reads Windows-1252 quotes, dashes and the euro sign', () => {
    expect(decodeText(cp1252(GERMAN))).to.deep.equal({
      text: GERMAN,
      encoding: 'windows-1252',
      warning: 'not valid UTF-8: decoded as windows-1252',
    });
  });

  it('keeps UTF-8 when only the last character was cut off', () => {
    const bytes = new TextEncoder().encode('Maßnahmen für Prüfungen ä');
    const decoded = decodeText(bytes.subarray(0, bytes.length - 1));
    expect(decoded.encoding).to.equal('utf-8');
    expect(decoded.text).to.equal('Maßnahmen für Prüfungen \uFFFD');
    expect(decoded.warning).to.equal('the last character is cut off (truncated file?): replaced with U+FFFD');
    const withBom = decodeText(new Uint8Array([0xef, 0xbb, 0xbf, ...bytes.subarray(0, bytes.length - 1)]));
    expect(withBom).to.include({ text: 'Maßnahmen für Prüfungen \uFFFD', encoding: 'utf-8-bom' });
    expect(withBom.warning).to.match(/cut off/);
  });

  it('reads Latin-1 whose only umlaut is near the end as Latin-1, not as UTF-8 cut off', () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('Die Kosten: 5 M'), 0xe4, 0x2e, 0x0a]);
    expect(decodeText(bytes)).to.deep.equal({
      text: 'Die Kosten: 5 Mä.\n',
      encoding: 'iso-8859-1',
      warning: 'not valid UTF-8: decoded as iso-8859-1',
    });
  });

  it('replaces invalid bytes after a UTF-8 BOM and says so', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('Größe '), 0xe4, 0x20, 0x41]);
    expect(decodeText(bytes)).to.deep.equal({
      text: 'Größe \uFFFD A',
      encoding: 'utf-8-bom',
      warning: 'not valid UTF-8 despite its byte order mark: invalid bytes replaced with U+FFFD',
    });
  });

  it('replaces an odd last byte and unpaired surrogates in UTF-16 and says so', () => {
    const odd = new Uint8Array([...utf16('Größe', 'le', true), 0x41]);
    expect(decodeText(odd)).to.deep.equal({
      text: 'Größe\uFFFD',
      encoding: 'utf-16le-bom',
      warning: 'not valid UTF-16LE (an odd number of bytes): invalid code units replaced with U+FFFD',
    });
    const lone = utf16('Maß\uD800nahme', 'be', true);
    expect(decodeText(lone)).to.deep.equal({
      text: 'Maß\uFFFDnahme',
      encoding: 'utf-16be-bom',
      warning: 'not valid UTF-16BE: invalid code units replaced with U+FFFD',
    });
    const guessed = utf16(`${'Dies ist ein Test für UTF-16 ohne BOM. '.repeat(3)}\uDC00`, 'le', false);
    expect(decodeText(guessed).warning).to.equal(
      'not valid UTF-16LE: invalid code units replaced with U+FFFD',
    );
  });

  it('reads UTF-32 LE and BE with a BOM; code points that cannot be text become U+FFFD', () => {
    const utf32 = (codes: number[], le: boolean): Uint8Array => {
      const bytes = new Uint8Array(4 + codes.length * 4);
      const view = new DataView(bytes.buffer);
      view.setUint32(0, 0xfeff, le);
      for (const [i, code] of codes.entries()) view.setUint32(4 + i * 4, code, le);
      return bytes;
    };
    const text = `${GERMAN} 😀`;
    const codes = [...text].map((c) => c.codePointAt(0)!);
    expect(decodeText(utf32(codes, true))).to.deep.equal({ text, encoding: 'utf-32le-bom' });
    expect(decodeText(utf32(codes, false))).to.deep.equal({ text, encoding: 'utf-32be-bom' });
    const bad = utf32([0x41, 0x110000, 0xd800, 0x42], true);
    expect(decodeText(new Uint8Array([...bad, 0x43]))).to.deep.equal({
      text: 'A\uFFFD\uFFFDB\uFFFD',
      encoding: 'utf-32le-bom',
      warning: 'not valid UTF-32LE: 3 invalid code units replaced with U+FFFD',
    });
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

  it('joins a word a soft hyphen breaks at a line end, with exact offsets; an ordinary hyphen there stays', async () => {
    const doc = await extractTxt(
      new TextEncoder().encode(
        'Merkblatt\n\nDas Kündigungs\u00AD\r\nschutzgesetz gilt. Ein Qualitäts-\nhandbuch\fSeite zwei: Kündigungs\u00AD \n  schutz',
      ),
      's.txt',
    );
    expect(doc.text).to.equal(
      'Merkblatt\n\nDas Kündigungsschutzgesetz gilt. Ein Qualitäts-\nhandbuch\n\nSeite zwei: Kündigungsschutz',
    );
    expect(doc.blocks.map((b) => [doc.text.slice(b.start, b.end), b.page])).to.deep.equal([
      ['Merkblatt', 1],
      ['Das Kündigungsschutzgesetz gilt. Ein Qualitäts-\nhandbuch', 1],
      ['Seite zwei: Kündigungsschutz', 2],
    ]);
    expect(doc.pages.map((p) => doc.text.slice(p.start, p.end))).to.deep.equal([
      'Merkblatt\n\nDas Kündigungsschutzgesetz gilt. Ein Qualitäts-\nhandbuch',
      'Seite zwei: Kündigungsschutz',
    ]);
  });

  it('keeps a damaged UTF-16 file and records what was wrong as a warning', async () => {
    const doc = await extractTxt(new Uint8Array([0xff, 0xfe, 0x41, 0, 0x42]), 'u.txt');
    expect(doc.text).to.equal('A\uFFFD');
    expect(doc.metadata.encoding).to.equal('utf-16le-bom');
    expect(doc.warnings).to.deep.equal([
      'not valid UTF-16LE (an odd number of bytes): invalid code units replaced with U+FFFD',
    ]);
  });

  it('reads a legacy file whose one non-ASCII byte is its last as legacy, not as UTF-8 cut short', () => {
    const latin1 = decodeText(Uint8Array.from([...Buffer.from('Mit freundlichem Gru'), 0xdf]));
    expect(latin1).to.include({ text: 'Mit freundlichem Gruß', encoding: 'iso-8859-1' });
    // UTF-8 before the cut: still a file cut short
    const cut = decodeText(Uint8Array.from([...Buffer.from('Grüße aus Köln, Gru'), 0xc3]));
    expect(cut).to.include({ text: 'Grüße aus Köln, Gru\uFFFD', encoding: 'utf-8' });
  });

  it('takes a line of only a no-break space or an invisible character for a blank line', async () => {
    for (const text of [
      'Absatz eins\n\u00a0\nAbsatz zwei',
      'Absatz eins\u2029\u2029Absatz zwei',
      'Absatz eins\n\u200b\nAbsatz zwei',
    ]) {
      const doc = await extractTxt(new TextEncoder().encode(text), 'a.txt');
      expect(
        doc.blocks.map((b) => doc.text.slice(b.start, b.end)),
        JSON.stringify(text),
      ).to.deep.equal(['Absatz eins', 'Absatz zwei']);
    }
  });

  it('does not read a short UTF-8 file with a stray NUL or two as UTF-16', () => {
    expect(decodeText(new TextEncoder().encode('# Ti\0tel\n\nTe\0xt')).encoding).to.equal('utf-8');
    expect(decodeText(utf16('Hallo Welt', 'le', false)).encoding).to.equal('utf-16le');
  });

  it('gives an empty document for a whitespace-only file', async () => {
    const doc = await extractTxt(new TextEncoder().encode('\n \n\t\n'), 'w.txt');
    expect(doc.text).to.equal('');
    expect(doc.blocks).to.deep.equal([]);
    expect(doc.format).to.equal('txt');
  });

  it('says what a file without text holds instead: a byte order mark, white space, front matter, markup', async () => {
    const bytes = (...parts: Array<string | number[]>) =>
      Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
    const bom = [0xef, 0xbb, 0xbf];
    const cases: Array<['txt' | 'md', Uint8Array, string]> = [
      ['txt', bytes(bom), 'no text (only a byte order mark)'],
      ['txt', bytes('   \n\n\t \n'), 'no text (only white space)'],
      ['txt', bytes(bom, ' \r\n'), 'no text (only a byte order mark and white space)'],
      ['txt', bytes([0xff, 0xfe, 0x20, 0x00]), 'no text (only a byte order mark and white space)'],
      ['txt', bytes('\u200B\n'), 'no text (only invisible characters)'],
      ['md', bytes(bom), 'no text (only a byte order mark)'],
      ['md', bytes(' \n\t\n'), 'no text (only white space)'],
      ['md', bytes('---\ntitle: x\n---\n\n'), 'no text (only front matter)'],
      [
        'md',
        bytes('---\ntitle: x\n---\n<!-- nur Kommentar -->\n'),
        'no text (only front matter and markup that is not shown, such as comments)',
      ],
      ['md', bytes(bom, '---\r\ntitle: x\r\n---\r\n'), 'no text (only a byte order mark and front matter)'],
      ['md', bytes('<!-- x -->\n\n***\n#\n'), 'no text (only markup that is not shown, such as comments)'],
    ];
    for (const [format, content, reason] of cases) {
      const label = `${format}: ${JSON.stringify(Buffer.from(content).toString('latin1'))}`;
      // the extractors give an empty document; the engine refuses it as a new version (content/extraction.ts)
      const doc = await (format === 'md' ? extractMarkdown : extractTxt)(content, `f.${format}`);
      expect(doc.blocks, label).to.deep.equal([]);
      const held = format === 'md' ? markdownHeldInsteadOfText(content) : heldInsteadOfText(content);
      expect(noTextReason(held), label).to.equal(reason);
    }
  });
});

describe('extract/txt and markdown: logical pages', () => {
  it('opens at most max_pages pages at form feeds; the rest is the last page, with a warning', async () => {
    // a file of form feeds made a page of every character (8 MB: 4 million pages and as many rows)
    const text = `${'Seite\f'.repeat(20_000)}Ende`;
    for (const extract of [extractTxt, extractMarkdown]) {
      const doc = await extract(Buffer.from(text), 'seiten', { ...defaultExtractOptions, maxPages: 100 });
      expect(doc.pages).to.have.length(100);
      expect(doc.warnings).to.include('more than 100 pages (form feeds): the rest is read as the last page');
      expect(doc.text.endsWith('Seite\nSeite\nEnde')).to.equal(true);
    }
    const few = await extractTxt(Buffer.from('eins\fzwei\fdrei\f'), 'drei', {
      ...defaultExtractOptions,
      maxPages: 3,
    });
    expect(few.pages).to.have.length(3);
    expect(few.warnings).to.deep.equal([]);
  });
});

describe('extract/txt decodeText: mostly UTF-8', () => {
  it('reads each stray byte 0x80-0xFF as its windows-1252 character and the rest as UTF-8, in one pass', () => {
    const valid = Buffer.from('Grüße aus Köln, Übung für Ärzte. '.repeat(40));
    const bytes: number[] = [...valid];
    let expected = valid.toString('utf8');
    for (let byte = 0x80; byte <= 0xff; byte++) {
      bytes.push(byte, 0x20);
      expected += `${decodeWindows1252(Uint8Array.of(byte))} `;
    }
    const decoded = decodeText(Uint8Array.from(bytes));
    expect(decoded.text).to.equal(expected);
    expect(decoded.warning).to.equal(
      'not valid UTF-8 in 128 bytes: decoded as windows-1252 there, the rest as UTF-8',
    );
  });
});
