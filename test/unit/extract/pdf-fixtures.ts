/**
 * PDF fixtures generated in code with pdfkit (standard 14 fonts, not embedded: the extractor must load
 * pdf.js's standard font data), plus a tiny PNG encoder for image-only pages.
 */
import { deflateSync } from 'node:zlib';
import PDFDocument from 'pdfkit';

export function renderPdf(
  draw: (doc: PDFKit.PDFDocument) => void,
  options: PDFKit.PDFDocumentOptions = {},
): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const doc = new PDFDocument({ autoFirstPage: false, compress: true, ...options });
    const chunks: Buffer[] = [];
    doc.on('data', (chunk: Buffer) => chunks.push(chunk));
    doc.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))));
    doc.on('error', reject);
    draw(doc);
    doc.end();
  });
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A grey-scale PNG with a diagonal pattern (so it is not a flat colour pdfkit could optimise away). */
export function makePng(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // grey-scale
  const raw = Buffer.alloc((width + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width + 1)] = 0; // filter: none
    for (let x = 0; x < width; x++) raw[y * (width + 1) + 1 + x] = (x + y) % 2 === 0 ? 30 : 220;
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * A three-page German document: numbered headings in a larger bold font, umlauts, a word hyphenated at a
 * line end, a suspended hyphen ("Lehr- und"), and an image-only third page (a "scan").
 */
export function germanHandbookPdf(): Promise<Uint8Array> {
  return renderPdf((doc) => {
    doc.info.Title = 'Handbuch Qualität';
    doc.addPage({ size: 'A4', margin: 50 });
    doc.font('Helvetica-Bold').fontSize(18).text('1 Einleitung', 50, 60);
    doc.font('Helvetica').fontSize(11);
    doc.text('Dieses Handbuch beschreibt die Qualitäts-', 50, 100, { lineBreak: false });
    doc.text('sicherung in der Ausbildung. Größere Änderungen', 50, 114, { lineBreak: false });
    doc.text('werden geprüft und übernommen.', 50, 128, { lineBreak: false });
    doc.text('Der zweite Absatz nennt Lehr-', 50, 170, { lineBreak: false });
    doc.text('und Lernmittel für die Übungen.', 50, 184, { lineBreak: false });
    doc.addPage({ size: 'A4', margin: 50 });
    doc.font('Helvetica-Bold').fontSize(14).text('1.1 Grundlagen der Prüfung', 50, 60);
    doc
      .font('Helvetica')
      .fontSize(11)
      .text('Die Prüfung besteht aus drei Teilen.', 50, 100, { lineBreak: false });
    doc.addPage({ size: 'A4', margin: 50 });
    doc.image(makePng(200, 150), 50, 60, { width: 400 });
  });
}

/** `(text)` for a content stream: Windows-1252 bytes, with the string's special characters escaped. */
const pdfString = (text: string): Buffer =>
  Buffer.concat([
    Buffer.from('('),
    Buffer.from(
      Array.from(
        text.replace(/[\\()]/g, (c) => `\\${c}`),
        (c) => {
          const code = c.charCodeAt(0);
          if (code > 0xff) throw new Error(`not in Windows-1252 here: ${c}`);
          return code;
        },
      ),
    ),
    Buffer.from(')'),
  ]);

/**
 * A PDF written by hand, one array of lines per page, in Helvetica (WinAnsiEncoding) with a ToUnicode map that
 * maps byte 0xAD to U+00AD SOFT HYPHEN, as word processors write the hyphen they draw at a line end ("\xad").
 * pdfkit cannot write such a map for the standard fonts.
 */
export function softHyphenPdf(pages: string[][]): Uint8Array {
  const toUnicode = [
    '/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def',
    '1 begincodespacerange <00> <FF> endcodespacerange',
    '2 beginbfrange <20> <7E> <0020> <C0> <FF> <00C0> endbfrange',
    '1 beginbfchar <AD> <00AD> endbfchar',
    'endcmap CMapName currentdict /CMap defineresource pop end end',
  ].join('\n');
  const stream = (content: Buffer) =>
    Buffer.concat([
      Buffer.from(`<< /Length ${content.length} >>\nstream\n`),
      content,
      Buffer.from('\nendstream'),
    ]);
  // objects 1-4, then the pages (5 on), then their content streams
  const pageObject = (i: number) => 5 + i;
  const contentObject = (i: number) => 5 + pages.length + i;
  const pageObjects = pages.map(
    (_, i) =>
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents ${contentObject(i)} 0 R >>`,
  );
  const contents = pages.map((lines) =>
    stream(
      Buffer.concat([
        Buffer.from('BT\n'),
        ...lines.flatMap((line, n) => [
          Buffer.from(`/F1 11 Tf 1 0 0 1 72 ${760 - 14 * n} Tm `),
          pdfString(line),
          Buffer.from(' Tj\n'),
        ]),
        Buffer.from('ET\n'),
      ]),
    ),
  );
  return pdfOfObjects([
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${pages.map((_, i) => `${pageObject(i)} 0 R`).join(' ')}] /Count ${pages.length} >>`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding /ToUnicode 4 0 R >>',
    stream(Buffer.from(toUnicode)),
    ...pageObjects,
    ...contents,
  ]);
}

/**
 * A one-page PDF written object by object: `content` as the page's content stream (Helvetica as /F1), `extra`
 * objects numbered from 6 on, `fonts` more entries of the page's font resources (`/F2 6 0 R` for a font among
 * `extra`), and `trailer` entries added to the trailer (an /Encrypt reference, say).
 */
export function handWrittenPdf(
  content: string,
  { extra = [], fonts = '', trailer = '' }: { extra?: string[]; fonts?: string; trailer?: string } = {},
): Uint8Array {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R ${fonts}>> >> >>`,
    `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    ...extra,
  ];
  return pdfOfObjects(objects, trailer);
}

/**
 * A PDF of these objects (numbered from 1, the first the catalog), with `trailer` entries added to its trailer. A
 * string is written as Latin-1 bytes; a Buffer as it is (a binary stream).
 */
function pdfOfObjects(objects: readonly (string | Buffer)[], trailer = ''): Uint8Array {
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  let length = parts[0]!.length;
  const offsets: number[] = [];
  const add = (part: Buffer) => {
    parts.push(part);
    length += part.length;
  };
  objects.forEach((body, i) => {
    offsets.push(length);
    add(
      Buffer.concat([
        Buffer.from(`${i + 1} 0 obj\n`),
        typeof body === 'string' ? Buffer.from(body, 'latin1') : body,
        Buffer.from('\nendobj\n'),
      ]),
    );
  });
  const xref = length;
  let tail = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) tail += `${String(offset).padStart(10, '0')} 00000 n \n`;
  tail += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R ${trailer}>>\nstartxref\n${xref}\n%%EOF\n`;
  add(Buffer.from(tail, 'latin1'));
  return new Uint8Array(Buffer.concat(parts));
}
