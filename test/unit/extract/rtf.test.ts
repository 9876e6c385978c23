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

  it('knows RTF by its start', () => {
    expect(isRtf(rtf('  \r\n{\\rtf1 x}'))).to.equal(true);
    expect(isRtf(rtf('<html>'))).to.equal(false);
    expect(isRtf(new Uint8Array(0))).to.equal(false);
  });
});
