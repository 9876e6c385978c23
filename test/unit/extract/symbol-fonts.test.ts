import { expect } from 'chai';
import { extractPdf } from '../../../src/extract/pdf.js';
import { symbolFontOf, symbolFontText } from '../../../src/extract/symbol-fonts.js';
import { defaultExtractOptions } from '../../../src/extract/types.js';
import { handWrittenPdf } from './pdf-fixtures.js';

/** A ToUnicode map that moves every code into the private use area, as pdf.js reads a symbol font's cmap. */
const PRIVATE_USE_CMAP = [
  '/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def',
  '1 begincodespacerange <00> <FF> endcodespacerange',
  '1 beginbfrange <20> <FF> <F020> endbfrange',
  'endcmap CMapName currentdict /CMap defineresource pop end end',
].join('\n');

/**
 * A one-page form: each line a code in the font /F2 (a box) and the option's text in Helvetica (/F1). /F2 is
 * a TrueType font named `symbolFont`, not embedded, whose ToUnicode map gives its codes as U+F020-U+F0FF.
 */
function formPdf(symbolFont: string, lines: Array<[string, string]>): Uint8Array {
  const content = lines
    .map(([code, text], i) => `BT /F2 11 Tf 72 ${700 - 20 * i} Td (${code}) Tj /F1 11 Tf ( ${text}) Tj ET`)
    .join('\n');
  return handWrittenPdf(content, {
    fonts: '/F2 6 0 R',
    extra: [
      `<< /Type /Font /Subtype /TrueType /BaseFont /${symbolFont} /ToUnicode 7 0 R >>`,
      `<< /Length ${PRIVATE_USE_CMAP.length} >>\nstream\n${PRIVATE_USE_CMAP}\nendstream`,
    ],
  });
}

/** the check boxes of a form as Word writes them: Wingdings o and ¨ empty, þ checked, ÿ (no equivalent) */
const OPTIONS: Array<[string, string]> = [
  ['o', 'Erstprüfung Klasse A'],
  ['\\250', 'Wiederholungsprüfung Klasse E'],
  ['\\376', 'Zusatzprüfung Morsen'],
  ['\\377', 'Anlage beigefügt'],
];

describe('extract/symbol-fonts', function () {
  this.timeout(60000);

  it('knows the Windows symbol fonts by their names in a PDF', () => {
    expect(
      ['HJHHGF+Wingdings-Regular', 'Wingdings', 'Wingdings2', 'Wingdings 3', 'ABCDEF+Webdings'].map(
        symbolFontOf,
      ),
    ).to.deep.equal(['wingdings', 'wingdings', 'wingdings 2', 'wingdings 3', 'webdings']);
    expect(['ArialMT', 'Symbol', 'ZapfDingbats', undefined].map(symbolFontOf)).to.deep.equal([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('maps Wingdings private use characters to their Unicode symbols and drops those without one', () => {
    const codes = [0x6f, 0xa8, 0xfe, 0xfd, 0xfc, 0x6c, 0xa7, 0xd8, 0x9f, 0x77, 0x20, 0x28, 0x25, 0x8c];
    const text = codes.map((code) => String.fromCharCode(0xf000 + code)).join('');
    expect(symbolFontText(text, 'wingdings')).to.equal('☐☐☑☒✓●▪➢•⬥ ☎🔔❶');
    // the candle, the Windows logo: no equivalent
    expect(symbolFontText('\uf027a\uf0ff', 'wingdings')).to.equal('a');
    // other characters of the item, private use characters outside the range stay
    expect(symbolFontText('x \uf8eb', 'wingdings')).to.equal('x \uf8eb');
  });

  it('drops the private use characters of the symbol fonts it has no table for', () => {
    expect(symbolFontText('\uf06f Ja \uf0a3', 'wingdings 2')).to.equal(' Ja ');
    expect(symbolFontText('\uf06f', 'webdings')).to.equal('');
  });

  it("gives a form's Wingdings check boxes as ballot boxes, not private use characters", async () => {
    const doc = await extractPdf(formPdf('Wingdings-Regular', OPTIONS), 'antrag.pdf', defaultExtractOptions);
    // the space after a dropped symbol is the option's own
    expect(doc.text.split('\n').map((line) => line.trim())).to.deep.equal([
      '☐ Erstprüfung Klasse A',
      '☐ Wiederholungsprüfung Klasse E',
      '☑ Zusatzprüfung Morsen',
      'Anlage beigefügt',
    ]);
  });

  it('leaves the private use characters of other fonts alone', async () => {
    const doc = await extractPdf(
      formPdf('MTExtra', OPTIONS.slice(0, 1)),
      'formel.pdf',
      defaultExtractOptions,
    );
    expect(doc.text).to.equal('\uf06f Erstprüfung Klasse A');
  });
});
