import { expect } from 'chai';
import { isRtf, rtfParagraphs } from '../../../src/extract/rtf.js';

/** RTF source as bytes; `\xHH` in the source stands for a raw byte. */
const rtf = (source: string): Uint8Array => Uint8Array.from(source, (c) => c.charCodeAt(0) & 0xff);

describe('extract/rtf', () => {
  it('reads paragraphs, headings by outline level or style, fields, tables and footnotes; hides what Word hides', () => {
    const paragraphs = rtfParagraphs(
      rtf(
        '{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fnil\\fcharset0 Calibri;}}{\\colortbl ;\\red0\\green0\\blue0;}\r\n' +
          "{\\stylesheet{\\s0 Normal;}{\\s1\\outlinelevel0 heading 1;}{\\s2 \\'dcberschrift 2;}{\\*\\cs10 Default Paragraph Font;}}\r\n" +
          '{\\*\\generator Riched20 10.0}{\\info{\\title Geheimer Titel}{\\author Jemand}}\\viewkind4\\uc1\r\n' +
          "\\pard\\s1\\f0\\fs32 Einf\\'fchrung\\par\r\n" +
          '\\pard\\s2 Grundlagen\\par\r\n' +
          "\\pard\\plain Die Pr\\'fcfung erfolgt j\\u228?hrlich{\\v  versteckt}{\\deleted  gestrichen}.\\par\r\n" +
          '\\pard\\outlinelevel2 Dritte Ebene\\par\r\n' +
          '\\pard{\\field{\\*\\fldinst HYPERLINK "http://example.org"}{\\fldrslt Verweis}}\\tab auf\\~Seite 3\\par\r\n' +
          '\\trowd\\cellx1000\\cellx2000\\pard\\intbl Rolle\\cell Aufgabe\\cell\\row\r\n' +
          "\\pard Satz mit Fu\\'dfnote{\\super\\chftn}{\\footnote\\pard\\plain Die Fu\\'dfnote.\\par}.\\par\r\n" +
          '{\\header\\pard Kopfzeile\\par}{\\pict\\wmetafile8\\bin4 }}{{}\\pard Nach dem Bild\\emdash Ende\\par\r\n' +
          '{\\listtext 1.\\tab}Erster Punkt \\{in Klammern\\}\\par}',
      ),
    );
    expect(paragraphs).to.deep.equal([
      { text: 'Einführung', heading: 1 },
      { text: 'Grundlagen', heading: 2 },
      { text: 'Die Prüfung erfolgt jährlich.' },
      { text: 'Dritte Ebene', heading: 3 },
      { text: 'Verweis auf Seite 3' },
      { text: 'Rolle | Aufgabe' },
      { text: 'Satz mit Fußnote.' },
      { text: 'Nach dem Bild—Ende' },
      { text: '1. Erster Punkt {in Klammern}' },
      { text: 'Die Fußnote.' },
    ]);
  });

  it('decodes the code page it names, \\u with its replacement characters, and surrogate pairs', () => {
    const cyrillic = rtfParagraphs(rtf("{\\rtf1\\ansi\\ansicpg1251 \\'cf\\'f0\\'e8\\'e2\\'e5\\'f2\\par}"));
    expect(cyrillic).to.deep.equal([{ text: 'Привет' }]);
    const unicode = rtfParagraphs(rtf("{\\rtf1\\uc2 Gru\\u223\\'df\\'dfe \\u-10179??\\u-8704??!\\par}"));
    expect(unicode).to.deep.equal([{ text: 'Gruße 😀!' }]);
    // a code page no TextDecoder knows keeps Windows-1252
    expect(rtfParagraphs(rtf("{\\rtf1\\ansicpg99999 Stra\\'dfe}"))).to.deep.equal([{ text: 'Straße' }]);
  });

  it('reads hostile input in one pass: deep nesting, endless words and numbers, \\bin past the end, stray braces', () => {
    const started = performance.now();
    const deep = rtfParagraphs(
      rtf(`{\\rtf1 Vorher\\par${'{'.repeat(200_000)}tief${'}'.repeat(200_010)} Nachher}`),
    );
    expect(deep.map((p) => p.text)).to.deep.equal(['Vorher', 'tief Nachher']);
    const words = rtfParagraphs(
      rtf(`{\\rtf1 A\\${'x'.repeat(100_000)} B\\u${'9'.repeat(100_000)} C\\bin99999999999 D}`),
    );
    expect(words[0]?.text.startsWith('A')).to.equal(true);
    expect(rtfParagraphs(rtf('{\\rtf1 \\'))).to.deep.equal([]);
    expect(rtfParagraphs(rtf("{\\rtf1 Ende\\'"))).to.deep.equal([{ text: 'Ende' }]);
    expect(performance.now() - started).to.be.below(5000);
  });

  it('keeps what \\v, \\deleted and \\plain switch apart, and counts a control symbol after \\u', () => {
    const read = (source: string) => rtfParagraphs(rtf(source)).map((p) => p.text);
    // a byte waiting to be decoded belongs to the text before the switch
    expect(read("{\\rtf1 caf\\'e9\\v versteckt\\v0  gut\\par}")).to.deep.equal(['café gut']);
    expect(read("{\\rtf1 a\\v\\'e9\\v0  b\\par}")).to.deep.equal(['a b']);
    // hidden and deleted are two properties: turning one off leaves the other on
    expect(read('{\\rtf1 a{\\v\\deleted0 versteckt}b{\\deleted\\v0 gestrichen}c\\par}')).to.deep.equal([
      'abc',
    ]);
    expect(read('{\\rtf1 a\\u233\\~b\\par}')).to.deep.equal(['aéb']);
  });

  it('reads a line break after a brace as nothing, so the destination after it is still known', () => {
    const read = (source: string) => rtfParagraphs(rtf(source)).map((p) => p.text);
    expect(read('{\\rtf1{\r\n\\fonttbl{\\f0 Arial;}}Hallo\\par}')).to.deep.equal(['Hallo']);
    expect(read('{\\rtf1 x{\\*\r\n\\fldinst HYPERLINK "u"}y\\par}')).to.deep.equal(['xy']);
  });

  it('keeps the last paragraph of a file cut off inside a group', () => {
    const read = (source: string) => rtfParagraphs(rtf(source)).map((p) => p.text);
    expect(read('{\\rtf1 Haupttext{\\*\\bkmkstart x')).to.deep.equal(['Haupttext']);
    expect(read('{\\rtf1 Haupttext{\\field{\\*\\fldinst HYPERLINK')).to.deep.equal(['Haupttext']);
    expect(read('{\\rtf1 Haupttext{\\footnote Fussnote')).to.deep.equal(['Haupttext', 'Fussnote']);
  });

  it('reads the second half of a double-byte character written as a letter', () => {
    expect(rtfParagraphs(rtf("{\\rtf1\\ansicpg932 \\'83A\\'83\\'43x\\par}"))).to.deep.equal([
      { text: 'アイx' },
    ]);
    // in a single-byte code page the letter is a letter
    expect(rtfParagraphs(rtf("{\\rtf1\\ansicpg1252 \\'e9A\\par}"))).to.deep.equal([{ text: 'éA' }]);
  });

  it('reads a row of many empty cells in linear time', () => {
    const cells = (n: number) => rtf(`{\\rtf1 x${'\\cell '.repeat(n)}y}`);
    const time = (n: number) => {
      const started = performance.now();
      expect(rtfParagraphs(cells(n))[0]?.text.startsWith('x |')).to.equal(true);
      return performance.now() - started;
    };
    time(1000); // compiled
    // quadratic took 16x as long for 4x the cells (0.5 s and 7.7 s at 10,000 and 40,000)
    expect(time(40_000)).to.be.below(Math.max(1000, 8 * time(10_000)));
  });

  it('knows RTF by its start', () => {
    expect(isRtf(rtf('  \r\n{\\rtf1 x}'))).to.equal(true);
    expect(isRtf(rtf('<html>'))).to.equal(false);
    expect(isRtf(new Uint8Array(0))).to.equal(false);
  });
});
