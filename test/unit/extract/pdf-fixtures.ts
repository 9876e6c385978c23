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
