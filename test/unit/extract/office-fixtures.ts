/**
 * Fixture builders for the ZIP/OLE2/DOCX/PPTX tests: everything generated in code, nothing read from disk.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { crc32, inflateRawSync } from 'node:zlib';
import {
  AlignmentType,
  Document,
  Footer,
  FootnoteReferenceRun,
  Header,
  HeadingLevel,
  Packer,
  PageBreak,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
} from 'docx';
import { Deflate, strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import PptxGenJSModule from 'pptxgenjs';

// pptxgenjs ships CJS-style typings for an ESM default export: under nodenext the types see a namespace
const PptxGenJS = PptxGenJSModule as unknown as typeof PptxGenJSModule.default;

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const corpusRoot = path.resolve(projectRoot, '../shared/corpus');

export const limits = { maxUnzippedBytes: 50 * 1024 * 1024, maxCompressionRatio: 200 };
export const extractOptions = {
  maxPages: 100,
  maxFileBytes: 50 * 1024 * 1024,
  maxUnzippedBytes: 50 * 1024 * 1024,
  maxCompressionRatio: 200,
};

/**
 * A raw DEFLATE stream of `megabytes` MiB of zeros, built without ever holding the zeros: one compressed
 * 1 MiB block (ending in a sync flush, so byte aligned and self-contained) repeated, then a final empty block.
 */
export function zerosDeflate(megabytes: number): Uint8Array {
  const parts: Uint8Array[] = [];
  const deflate = new Deflate({ level: 9 }, (chunk) => parts.push(chunk));
  deflate.push(new Uint8Array(1 << 20));
  deflate.flush(true);
  const block = concat(parts);
  const stream = new Uint8Array(block.length * megabytes + 2);
  for (let i = 0; i < megabytes; i++) stream.set(block, i * block.length);
  stream.set([0x03, 0x00], block.length * megabytes);
  return stream;
}

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export interface RawEntry {
  name: string;
  /** bytes as stored in the archive (already deflated when method is 8) */
  data: Uint8Array;
  method: 0 | 8;
  /** uncompressed size to declare (may lie) */
  declaredSize: number;
  encrypted?: boolean;
  /** CRC-32 to declare; by default that of the uncompressed bytes (of `data` inflated, when that is small) */
  crc32?: number;
}

/** The CRC-32 an honest writer would declare for an entry; 0 for deflated data too large to inflate here. */
function honestCrc(entry: RawEntry): number {
  if (entry.method === 0) return crc32(entry.data);
  try {
    return crc32(inflateRawSync(entry.data, { maxOutputLength: 16 << 20 }));
  } catch {
    return 0; // a bomb or broken stream: the reader refuses it before any checksum
  }
}

/** A ZIP written by hand, so declared sizes and checksums can say whatever a test needs. */
export function buildZip(entries: RawEntry[], prefix: Uint8Array = new Uint8Array(0)): Uint8Array {
  const locals: Uint8Array[] = [prefix];
  const centrals: Uint8Array[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = strToU8(entry.name);
    const flags = (entry.encrypted ? 1 : 0) | 0x800;
    const local = new Uint8Array(30 + name.length);
    const lv = new DataView(local.buffer);
    lv.setUint32(0, 0x04034b50, true);
    lv.setUint16(4, 20, true);
    lv.setUint16(6, flags, true);
    lv.setUint16(8, entry.method, true);
    const crc = entry.crc32 ?? honestCrc(entry);
    lv.setUint32(14, crc, true);
    lv.setUint32(18, entry.data.length, true);
    lv.setUint32(22, entry.declaredSize, true);
    lv.setUint16(26, name.length, true);
    local.set(name, 30);
    const central = new Uint8Array(46 + name.length);
    const cv = new DataView(central.buffer);
    cv.setUint32(0, 0x02014b50, true);
    cv.setUint16(4, 20, true);
    cv.setUint16(6, 20, true);
    cv.setUint16(8, flags, true);
    cv.setUint16(10, entry.method, true);
    cv.setUint32(16, crc, true);
    cv.setUint32(20, entry.data.length, true);
    cv.setUint32(24, entry.declaredSize, true);
    cv.setUint16(28, name.length, true);
    cv.setUint32(42, offset, true);
    central.set(name, 46);
    locals.push(local, entry.data);
    centrals.push(central);
    offset += local.length + entry.data.length;
  }
  const cd = concat(centrals);
  const eocd = new Uint8Array(22);
  const ev = new DataView(eocd.buffer);
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, entries.length, true);
  ev.setUint16(10, entries.length, true);
  ev.setUint32(12, cd.length, true);
  ev.setUint32(16, offset, true);
  return concat([...locals, cd, eocd]);
}

export const stored = (name: string, text: string): RawEntry => {
  const data = strToU8(text);
  return { name, data, method: 0, declaredSize: data.length };
};

/**
 * A minimal OLE2/CFB container (512-byte sectors): header, one FAT sector, one directory sector holding a
 * root entry and the given stream names. `cyclicDirectory` makes the directory chain point to itself.
 */
export function buildCfb(streams: string[], options: { cyclicDirectory?: boolean } = {}): Uint8Array {
  const bytes = new Uint8Array(512 * 3);
  const view = new DataView(bytes.buffer);
  bytes.set([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], 0);
  view.setUint16(0x18, 0x3e, true);
  view.setUint16(0x1a, 3, true);
  view.setUint16(0x1c, 0xfffe, true);
  view.setUint16(0x1e, 9, true);
  view.setUint16(0x20, 6, true);
  view.setUint32(0x2c, 1, true); // one FAT sector
  view.setUint32(0x30, 1, true); // directory starts at sector 1
  view.setUint32(0x38, 4096, true);
  view.setUint32(0x3c, 0xfffffffe, true);
  view.setUint32(0x44, 0xfffffffe, true);
  for (let i = 0; i < 109; i++) view.setUint32(0x4c + i * 4, i === 0 ? 0 : 0xffffffff, true);
  // sector 0 (FAT): sector 0 is a FAT sector, sector 1 ends the directory chain (or loops)
  const fat = 512;
  for (let i = 0; i < 128; i++) view.setUint32(fat + i * 4, 0xffffffff, true);
  view.setUint32(fat, 0xfffffffd, true);
  view.setUint32(fat + 4, options.cyclicDirectory ? 1 : 0xfffffffe, true);
  // sector 1 (directory): 4 entries of 128 bytes
  const dir = 1024;
  ['Root Entry', ...streams].slice(0, 4).forEach((name, i) => {
    const entry = dir + i * 128;
    for (let c = 0; c < name.length; c++) view.setUint16(entry + c * 2, name.charCodeAt(c), true);
    view.setUint16(entry + 0x40, (name.length + 1) * 2, true);
    bytes[entry + 0x42] = i === 0 ? 5 : 2;
  });
  return bytes;
}

/** Rewrites parts of an OPC package (DOCX/PPTX); `edits` map a part name to new text (or null to delete). */
export function editPackage(
  bytes: Uint8Array,
  edits: Record<string, string | Uint8Array | ((old: string) => string) | null>,
): Uint8Array {
  const files = unzipSync(bytes);
  for (const [name, edit] of Object.entries(edits)) {
    if (edit === null) delete files[name];
    else if (edit instanceof Uint8Array) files[name] = edit.slice();
    else
      files[name] = strToU8(
        typeof edit === 'function' ? edit(strFromU8(files[name] ?? new Uint8Array(0))) : edit,
      );
  }
  return zipSync(files);
}

/**
 * The package with its main part under another name (as Word Online and SharePoint save word/document2.xml): the part
 * and its relationships renamed, the package relationships and the content types naming the new name.
 */
export function renameMainPart(bytes: Uint8Array, from: string, to: string): Uint8Array {
  const files = unzipSync(bytes);
  const relsOf = (part: string) => part.replace(/([^/]+)$/, '_rels/$1.rels');
  for (const [old, renamed] of [
    [from, to],
    [relsOf(from), relsOf(to)],
  ] as const) {
    if (!files[old]) continue;
    files[renamed] = files[old];
    delete files[old];
  }
  for (const list of ['_rels/.rels', '[Content_Types].xml'])
    files[list] = strToU8(strFromU8(files[list]!).replaceAll(from, to));
  return zipSync(files);
}

export async function makeDocx(): Promise<Uint8Array> {
  const doc = new Document({
    title: 'Handbuch Qualitätssicherung',
    creator: 'Jürgen Müller',
    footnotes: { 1: { children: [new Paragraph('Quelle: ISO 9001, Abschnitt 4.1')] } },
    sections: [
      {
        headers: { default: new Header({ children: [new Paragraph('Kopfzeile Schulung')] }) },
        footers: { default: new Footer({ children: [new Paragraph('Fußzeile Seite')] }) },
        children: [
          new Paragraph({ text: 'Handbuch für Prüfer', heading: HeadingLevel.TITLE }),
          new Paragraph({ text: 'Einführung', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({
            children: [new TextRun('Die Größe der Änderung ist überschaubar.'), new FootnoteReferenceRun(1)],
          }),
          new Paragraph({ text: 'Grundlagen', heading: HeadingLevel.HEADING_2 }),
          new Paragraph({ text: 'Erster Punkt', bullet: { level: 0 } }),
          new Paragraph({ text: 'Unterpunkt', bullet: { level: 1 } }),
          new Table({
            rows: [
              new TableRow({
                children: [
                  new TableCell({ children: [new Paragraph('Begriff')] }),
                  new TableCell({ children: [new Paragraph('Bedeutung')] }),
                ],
              }),
              new TableRow({
                children: [
                  new TableCell({ children: [new Paragraph('Audit')] }),
                  new TableCell({ children: [new Paragraph('Prüfung')] }),
                ],
              }),
            ],
          }),
          new Paragraph({ children: [new PageBreak()] }),
          new Paragraph({ text: 'Anhang', heading: HeadingLevel.HEADING_1, alignment: AlignmentType.LEFT }),
          new Paragraph('Text auf der zweiten Seite.'),
        ],
      },
    ],
  });
  return new Uint8Array(await Packer.toBuffer(doc));
}

export async function makePptx(slides = 2): Promise<Uint8Array> {
  const pptx = new PptxGenJS();
  pptx.defineSlideMaster({
    title: 'TITLE_BODY',
    objects: [
      { placeholder: { options: { name: 'title', type: 'title', x: 0.5, y: 0.2, w: 9, h: 1 }, text: '' } },
    ],
  });
  for (let i = 1; i <= slides; i++) {
    const slide = pptx.addSlide({ masterName: 'TITLE_BODY' });
    if (i === 1) {
      slide.addText('Freier Text vor dem Titel', { x: 0.5, y: 4.5, w: 8, h: 0.5 });
      slide.addText('Einführung in die Qualitätssicherung', { placeholder: 'title' });
      slide.addText(
        [
          { text: 'Erster Punkt', options: { bullet: true } },
          { text: 'Unterpunkt', options: { bullet: true, indentLevel: 1 } },
        ],
        { x: 0.5, y: 1.5, w: 8, h: 2 },
      );
      slide.addNotes('Sprechernotiz: Zeit für Fragen einplanen');
    } else if (i === 2) {
      slide.addText('Begriffe', { placeholder: 'title' });
      slide.addTable(
        [
          [{ text: 'Begriff' }, { text: 'Bedeutung' }],
          [{ text: 'Audit' }, { text: 'Prüfung' }],
        ],
        { x: 0.5, y: 1.5, w: 8 },
      );
    } else {
      slide.addText(`Folie ${i}`, { placeholder: 'title' });
    }
  }
  return new Uint8Array((await pptx.write({ outputType: 'nodebuffer' })) as Buffer);
}
