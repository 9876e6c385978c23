import { expect } from 'chai';
import type { TextItem } from 'pdfjs-dist/types/src/display/api.js';
import { extractPdf } from '../../../src/extract/pdf.js';
import { groupLines } from '../../../src/extract/pdf-lines.js';
import { compatibilityForms, dingbatsText } from '../../../src/extract/pdf-unicode.js';
import { defaultExtractOptions } from '../../../src/extract/types.js';
import { renderPdf } from './pdf-fixtures.js';

type Kit = PDFKit.PDFDocument;

/** One run of text at a fixed position, as a formula editor or an OCR layer writes it. */
const put = (doc: Kit, font: string, size: number, text: string, x: number, y: number): void => {
  doc.font(font).fontSize(size).text(text, x, y, { lineBreak: false });
};

async function textOf(draw: (doc: Kit) => void): Promise<string> {
  const bytes = await renderPdf((doc) => {
    doc.addPage({ size: 'A4', margin: 50 });
    draw(doc);
  });
  return (await extractPdf(bytes, 'lines.pdf', defaultExtractOptions)).text;
}

/** A pdf.js text item: `size` high, `width` wide, baseline at (x, y); `scaleX` stretches it sideways. */
function run(str: string, x: number, y: number, size: number, width: number, scaleX = size): TextItem {
  return {
    str,
    dir: 'ltr',
    transform: [scaleX, 0, 0, size, x, y],
    width,
    height: size,
    fontName: 'f1',
    hasEOL: false,
  };
}

const linesOf = (items: TextItem[]): string[] =>
  groupLines(items, () => false).map((line) => line.text.normalize('NFC'));

describe('extract/pdf lines', function () {
  this.timeout(60000);

  it('puts runs a formula editor draws font by font back in their places on the line', async () => {
    // letters first, then the operators of that font, as MathType and Word equations draw them
    const text = await textOf((doc) => {
      put(doc, 'Times-Italic', 12, 'U', 100, 100);
      put(doc, 'Times-Italic', 12, 'I', 124, 100);
      put(doc, 'Times-Italic', 12, 'R', 140, 100);
      put(doc, 'Times-Roman', 12, '=', 111, 100);
      put(doc, 'Times-Roman', 12, '·', 132, 100);
    });
    expect(text).to.equal('U = I · R');
  });

  it('keeps an exponent drawn after its line next to its base, and a comma drawn into a gap in the number', async () => {
    const text = await textOf((doc) => {
      put(doc, 'Times-Roman', 12, '10', 100, 140);
      put(doc, 'Times-Roman', 12, '0 001', 140, 140);
      put(doc, 'Times-Roman', 7, '-3', 112, 137);
      put(doc, 'Times-Roman', 12, '=', 126, 140);
      put(doc, 'Times-Roman', 12, ',', 140 + doc.font('Times-Roman').fontSize(12).widthOfString('0'), 140);
    });
    expect(text).to.equal('10-3 = 0,001');
  });

  it('keeps indices on their line: R1 + R2', async () => {
    const text = await textOf((doc) => {
      put(doc, 'Times-Italic', 12, 'R', 100, 100);
      put(doc, 'Times-Roman', 12, '+', 116, 100);
      put(doc, 'Times-Italic', 12, 'R', 128, 100);
      put(doc, 'Times-Roman', 7, '1', 107.5, 104);
      put(doc, 'Times-Roman', 7, '2', 135.5, 104);
    });
    expect(text).to.equal('R1 + R2');
  });

  it('turns an accent drawn over a letter into that letter with the accent (¨U -> Ü)', async () => {
    const text = await textOf((doc) => {
      put(doc, 'Times-Roman', 12, 'Mit ', 100, 180);
      put(doc, 'Times-Roman', 12, '¨', 121.5, 180);
      put(doc, 'Times-Roman', 12, 'Uberlagerung und Pi', 121, 180);
      put(doc, 'Times-Roman', 12, '˜', 219, 180);
      put(doc, 'Times-Roman', 12, 'nata', 218, 180);
    });
    expect(text).to.equal('Mit Überlagerung und Piñata');
  });

  it('makes an accent ending one run and set over a dotless ı the plain ï TeX meant (na¨ + ıve)', () => {
    const lines = linesOf([run('a na¨', 54, 612.4, 9, 18.4), run('ıve implementation', 69.6, 612.4, 9, 70)]);
    expect(lines).to.deep.equal(['a naïve implementation']);
  });

  it('separates a footnote number from the first word of its footnote', async () => {
    const text = await textOf((doc) => {
      put(doc, 'Helvetica', 6, '1', 100, 300);
      put(doc, 'Helvetica', 9, 'Diese Metrik heißt so.', 104, 302);
    });
    expect(text).to.equal('1 Diese Metrik heißt so.');
  });

  it('reads text running up a turned page line by line, even when every word is a run of its own', async () => {
    const text = await textOf((doc) => {
      doc.font('Helvetica').fontSize(11);
      ['This Contract, executed and entered', 'into as of this day by the Office'].forEach((line, row) => {
        let along = 100;
        for (const word of line.split(' ')) {
          doc.save();
          doc.rotate(-90, { origin: [100 + row * 16, 700 - along] });
          doc.text(word, 100 + row * 16, 700 - along, { lineBreak: false });
          doc.restore();
          along += doc.widthOfString(`${word} `);
        }
      });
    });
    expect(text).to.equal('This Contract, executed and entered\ninto as of this day by the Office');
  });

  it('keeps a table row together although pdf.js gives its gap markers more width than the gap', () => {
    const lines = linesOf([
      run('Name', 77.3, 616.4, 11, 29.3),
      run(' ', 106.6, 616.4, 11, 168.9),
      run('Celsius', 233.3, 616.4, 11, 36),
      run(' ', 269.3, 616.4, 11, 159.9),
      run('Fahrenheit', 389.3, 616.4, 11, 52.6),
    ]);
    expect(lines).to.deep.equal(['Name Celsius Fahrenheit']);
  });

  it('does not take a two-line label beside a large word for scripts of that word', () => {
    const lines = linesOf([
      run('Arbeitsgericht', 45.1, 636.3, 11.1, 75.2),
      { ...run('Geschäftsnummer des Gerichts', 258.6, 639.5, 5.6, 80), hasEOL: true },
      run('Bei Schreiben an das Gericht', 258.6, 633.1, 5.6, 80),
    ]);
    // the label's first line sits on the word's baseline (pdf.js's own layout puts it there too)
    expect(lines).to.deep.equal([
      'Arbeitsgericht\tGeschäftsnummer des Gerichts',
      'Bei Schreiben an das Gericht',
    ]);
  });

  it('does not let a glyph stretched sideways pull the next line into its own', () => {
    // an OCR layer: one run per word, one glyph stretched to 64 times its height's width
    const lines = linesOf([
      run('with', 100, 552.4, 11.5, 20),
      run('the', 125, 552.4, 11.5, 14),
      run('s', 145, 552.4, 11.5, 24.8, 63.7),
      { ...run('and', 175, 552.4, 11.5, 16), hasEOL: true },
      run('this', 101, 539, 11.5, 16),
      run('The', 122, 539, 11.5, 17),
    ]);
    expect(lines).to.deep.equal(['with the s and', 'this The']);
  });

  it('writes an exponent and the index stacked under it one after the other, not interleaved', () => {
    // TeX draws F, then the exponent (its minus and its one in two fonts), then the index under them
    const lines = linesOf([
      run('F', 100, 500, 10.9, 7),
      run('−', 107.5, 504, 8, 6),
      run('1', 113.5, 504, 8, 4),
      run('j', 108, 497, 8, 3),
      run('◦ F', 122, 500, 10.9, 14),
    ]);
    expect(lines).to.deep.equal(['F−1j ◦ F']);
  });

  it('maps ZapfDingbats codes that pdf.js leaves raw to the symbols (4 -> ✔, l -> ●)', async () => {
    const text = await textOf((doc) => put(doc, 'ZapfDingbats', 12, '4l', 100, 220));
    expect(text).to.equal('✔●');
    expect(dingbatsText('\u00ac')).to.equal('①');
  });

  it('keeps the micro sign as written while expanding ligatures', async () => {
    const text = await textOf((doc) => put(doc, 'Helvetica', 12, 'Kondensator 0,22 µF', 100, 260));
    expect(text).to.equal('Kondensator 0,22 \u00b5F');
    expect(compatibilityForms('\ufb01nden 0,22 \u00b5F\u00a0')).to.equal('finden 0,22 \u00b5F ');
  });
});
