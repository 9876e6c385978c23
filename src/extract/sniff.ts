/**
 * Content sniffing: does the file hold what its extension says? Decided from magic bytes and, for Office
 * files, from the container's directory (ZIP central directory or OLE2/CFB directory), never by trusting
 * the extension alone. A legacy .doc renamed to .docx may contain an embedded ZIP (its theme), so "opens as a
 * ZIP somewhere" is not enough: the OLE2 magic is checked first and the ZIP must hold the main part (by its usual
 * name, or by the content type its [Content_Types].xml gives it).
 */
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { ErrorCodes, FileError } from '../errors.js';
import { guessUtf16 } from './txt.js';
import type { DocumentFormat } from './types.js';
import { inspectZip, listZipEntries, type ZipEntryInfo, zipArchive } from './zip.js';

export const SUPPORTED_EXTENSIONS: Record<string, DocumentFormat> = {
  pdf: 'pdf',
  docx: 'docx',
  pptx: 'pptx',
  md: 'md',
  markdown: 'md',
  txt: 'txt',
};

const LEGACY_MESSAGE = 'legacy binary Word/PowerPoint format (.doc/.ppt) is not supported';
const ENCRYPTED_MESSAGE = 'encrypted Office document (password protected)';

const OLE2_MAGIC = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
const PDF_WINDOW = 1024;

const startsWith = (bytes: Uint8Array, magic: number[], at = 0): boolean =>
  bytes.length >= at + magic.length && magic.every((b, i) => bytes[at + i] === b);

const isZip = (bytes: Uint8Array): boolean =>
  bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && [3, 5, 7].includes(bytes[2]!);

/** `%PDF` anywhere in the first 1024 bytes (readers accept junk before the header). */
export function hasPdfHeader(bytes: Uint8Array): boolean {
  const end = Math.min(bytes.length, PDF_WINDOW) - 4;
  for (let i = 0; i <= end; i++) {
    if (bytes[i] === 0x25 && bytes[i + 1] === 0x50 && bytes[i + 2] === 0x44 && bytes[i + 3] === 0x46)
      return true;
  }
  return false;
}

/** Names well-known binary formats by their magic bytes (for messages and the text checks). */
export function binaryKind(bytes: Uint8Array): string | undefined {
  if (startsWith(bytes, [0x25, 0x50, 0x44, 0x46])) return 'PDF';
  if (isZip(bytes)) return 'ZIP';
  if (startsWith(bytes, OLE2_MAGIC)) return 'OLE2 (legacy Office)';
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47])) return 'PNG';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'JPEG';
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38])) return 'GIF';
  if (startsWith(bytes, [0x1f, 0x8b])) return 'gzip';
  if (startsWith(bytes, [0x52, 0x61, 0x72, 0x21])) return 'RAR';
  if (startsWith(bytes, [0x37, 0x7a, 0xbc, 0xaf])) return '7z';
  return undefined;
}

/**
 * Stream and storage names of an OLE2/CFB container, read from its directory chain. Every sector number is
 * checked against the file and every chain against cycles, so a fuzzed header cannot loop or read outside.
 * Returns undefined when the directory cannot be read.
 */
export function readCfbNames(bytes: Uint8Array): string[] | undefined {
  if (!startsWith(bytes, OLE2_MAGIC) || bytes.length < 512) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const shift = view.getUint16(0x1e, true);
  if (shift !== 9 && shift !== 12) return undefined;
  const sectorSize = 1 << shift;
  const sectorCount = Math.floor((bytes.length - sectorSize) / sectorSize) + 1;
  const sectorOffset = (sector: number): number | undefined => {
    const offset = (sector + 1) * sectorSize;
    return sector >= 0 && offset + sectorSize <= bytes.length ? offset : undefined;
  };
  // FAT sector numbers: 109 in the header, more in the DIFAT chain
  const fatSectors: number[] = [];
  for (let i = 0; i < 109; i++) fatSectors.push(view.getUint32(0x4c + i * 4, true));
  let difat = view.getUint32(0x44, true);
  const perSector = sectorSize / 4;
  for (let guard = 0; difat < 0xfffffffa && guard < sectorCount; guard++) {
    const offset = sectorOffset(difat);
    if (offset === undefined) break;
    for (let i = 0; i < perSector - 1; i++) fatSectors.push(view.getUint32(offset + i * 4, true));
    difat = view.getUint32(offset + (perSector - 1) * 4, true);
  }
  const next = (sector: number): number | undefined => {
    const fatSector = fatSectors[Math.floor(sector / perSector)];
    if (fatSector === undefined || fatSector >= 0xfffffffa) return undefined;
    const offset = sectorOffset(fatSector);
    return offset === undefined ? undefined : view.getUint32(offset + (sector % perSector) * 4, true);
  };
  const names: string[] = [];
  const seen = new Set<number>();
  let sector = view.getUint32(0x30, true);
  while (sector < 0xfffffffa) {
    if (seen.has(sector)) break; // a cyclic chain: what was read so far is all there is
    seen.add(sector);
    const offset = sectorOffset(sector);
    if (offset === undefined) return undefined;
    for (let entry = offset; entry < offset + sectorSize; entry += 128) {
      const nameBytes = Math.min(view.getUint16(entry + 0x40, true), 64);
      const type = bytes[entry + 0x42];
      if (type === 0 || nameBytes < 2) continue;
      let name = '';
      for (let i = 0; i < nameBytes - 2; i += 2) {
        name += String.fromCharCode(view.getUint16(entry + i, true));
      }
      names.push(name);
    }
    const following = next(sector);
    if (following === undefined) return names.length > 0 ? names : undefined;
    sector = following;
  }
  return names;
}

function ole2Error(bytes: Uint8Array, file: string): FileError {
  const names = readCfbNames(bytes);
  if (names === undefined) {
    return new FileError(ErrorCodes.CORRUPT_FILE, file, 'corrupt OLE2 container (directory unreadable)');
  }
  if (names.includes('EncryptedPackage')) {
    return new FileError(ErrorCodes.ENCRYPTED_DOCUMENT, file, ENCRYPTED_MESSAGE);
  }
  return new FileError(ErrorCodes.LEGACY_FORMAT, file, LEGACY_MESSAGE, {
    details: {
      streams: names.filter((n) => ['WordDocument', 'PowerPoint Document', 'Workbook'].includes(n)),
    },
  });
}

function sniffOffice(bytes: Uint8Array, format: 'docx' | 'pptx', file: string): void {
  const kind = format === 'docx' ? 'Word document' : 'PowerPoint document';
  const mainPart = USUAL_MAIN_PARTS[format];
  if (startsWith(bytes, OLE2_MAGIC)) throw ole2Error(bytes, file);
  if (isZip(bytes)) {
    const entries = listZipEntries(bytes, file);
    const names = new Set(entries.map((entry) => entry.name.toLowerCase()));
    if (names.has(mainPart)) return;
    const declared = declaredFormat(bytes, entries, names, file);
    if (declared === format) return;
    const other = format === 'docx' ? 'pptx' : 'docx';
    throw new FileError(ErrorCodes.FORMAT_MISMATCH, file, `not a ${kind} (${mainPart} missing)`, {
      details: { looksLike: declared ?? (names.has(USUAL_MAIN_PARTS[other]) ? other : undefined) },
    });
  }
  if (hasPdfHeader(bytes))
    throw new FileError(ErrorCodes.FORMAT_MISMATCH, file, `file is a PDF, not a ${kind}`);
  const other = binaryKind(bytes);
  throw new FileError(
    ErrorCodes.FORMAT_MISMATCH,
    file,
    `not a ${kind} (${other ? `${other} content` : 'neither a ZIP package nor an OLE2 container'})`,
  );
}

/** Where Word and PowerPoint put a package's main part (lower case); other writers may name it otherwise. */
const USUAL_MAIN_PARTS = { docx: 'word/document.xml', pptx: 'ppt/presentation.xml' } as const;

/** the content types of a main part: a Word document (or template, macro-enabled), a presentation (or show) */
const MAIN_CONTENT_TYPES = {
  docx: /^application\/vnd\.(?:openxmlformats-officedocument\.wordprocessingml|ms-word)\.[\w.-]*main\+xml$/i,
  pptx: /^application\/vnd\.(?:openxmlformats-officedocument\.presentationml|ms-powerpoint)\.[\w.-]*main\+xml$/i,
} as const;

/** an Override of [Content_Types].xml, and its attributes */
const OVERRIDE = /<Override\b[^>]*>/g;
const PART_NAME = /\sPartName\s*=\s*(?:"([^"]*)"|'([^']*)')/;
const CONTENT_TYPE = /\sContentType\s*=\s*(?:"([^"]*)"|'([^']*)')/;

/** What the content types of a package may inflate while it is sniffed (one small part). */
const SNIFF_LIMITS = { maxUnzippedBytes: 16 * 1024 * 1024, maxCompressionRatio: 200 };

/**
 * The format of the main part a package without the usual one has, by the content type [Content_Types].xml gives a
 * part that is there, whatever its name (Word Online and SharePoint save word/document2.xml; the extractors find the
 * part as ECMA-376 has it, through the package's officeDocument relationship: office-metadata.ts officeDocumentPart).
 * undefined when the list is missing, unreadable or names no such part. A plain search, not the XML parser: that is
 * a module the validate step does not load otherwise.
 */
function declaredFormat(
  bytes: Uint8Array,
  entries: readonly ZipEntryInfo[],
  names: ReadonlySet<string>,
  file: string,
): 'docx' | 'pptx' | undefined {
  let contentTypes: string;
  try {
    const zip = zipArchive(bytes, entries, file, SNIFF_LIMITS);
    if (!zip.has(CONTENT_TYPES_PART)) return undefined;
    contentTypes = zip.readText(CONTENT_TYPES_PART);
  } catch (error) {
    if (error instanceof FileError) return undefined; // damaged or too large: the usual names decide
    throw error;
  }
  for (const [override] of contentTypes.matchAll(OVERRIDE)) {
    const type = CONTENT_TYPE.exec(override);
    const part = PART_NAME.exec(override);
    if (!type || !part) continue;
    const format = (['docx', 'pptx'] as const).find((f) => MAIN_CONTENT_TYPES[f].test(type[1] ?? type[2]!));
    if (format && names.has((part[1] ?? part[2]!).replace(/^\/+/, '').toLowerCase())) return format;
  }
  return undefined;
}

const CONTENT_TYPES_PART = '[Content_Types].xml';

const SAMPLE_BYTES = 64 * 1024;

/**
 * Whether bytes that begin with a binary format's magic are text all the same ("%PDF/A-Konformität: ...",
 * "GIF89a ist ein Bildformat."): no control byte other than tab, line breaks and form feed in the sample, where
 * every binary format puts some within its first bytes (sizes, NULs, compressed data). A PDF header with its
 * version ("%PDF-1.7") is a PDF, even one written all in ASCII.
 */
function textDespiteMagic(bytes: Uint8Array, kind: string): boolean {
  if (kind !== 'PDF' && kind !== 'GIF') return false; // the only magics that are words a text can begin with
  if (kind === 'PDF' && bytes[4] === 0x2d && bytes[5]! >= 0x30 && bytes[5]! <= 0x39) return false;
  const sample = bytes.subarray(0, SAMPLE_BYTES);
  for (const byte of sample) {
    if ((byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0c && byte !== 0x0d) || byte === 0x7f)
      return false;
  }
  return true;
}

/** Text files: no known binary magic (unless the rest is text), and NUL bytes only where UTF-16 puts them. */
function sniffText(bytes: Uint8Array, extension: string, file: string): void {
  const kind = binaryKind(bytes);
  if (kind && !textDespiteMagic(bytes, kind))
    throw new FileError(ErrorCodes.FORMAT_MISMATCH, file, `binary content (${kind}) in a .${extension} file`);
  if (startsWith(bytes, [0xff, 0xfe]) || startsWith(bytes, [0xfe, 0xff])) return; // UTF-16 with BOM
  const sample = bytes.subarray(0, SAMPLE_BYTES);
  // the common case, found by the native search: no NUL at all (counting them byte by byte ran in the
  // interpreter for the first files of a run and cost a compile)
  if (sample.indexOf(0) === -1) return;
  let even = 0;
  let odd = 0;
  for (let i = 0; i < sample.length; i++) {
    if (sample[i] === 0) {
      if (i % 2 === 0) even++;
      else odd++;
    }
  }
  const nuls = even + odd;
  if (nuls === 0 || guessUtf16(bytes)) return;
  // a stray NUL in a long text is noise the normaliser removes, not a binary file
  if (nuls / sample.length < 0.001) return;
  throw new FileError(ErrorCodes.FORMAT_MISMATCH, file, `binary content (NUL bytes) in a .${extension} file`);
}

/**
 * Decides the format of `bytes` named with `extension` (with or without dot), or throws a FileError:
 * FILE_EMPTY, UNSUPPORTED_FORMAT, LEGACY_FORMAT, ENCRYPTED_DOCUMENT, FORMAT_MISMATCH, CORRUPT_FILE.
 */
export function sniffFormat(bytes: Uint8Array, extension: string, file: string): { format: DocumentFormat } {
  const ext = extension.replace(/^\./, '').toLowerCase();
  const format = SUPPORTED_EXTENSIONS[ext];
  if (!format) {
    if (ext === 'doc' || ext === 'ppt') throw new FileError(ErrorCodes.LEGACY_FORMAT, file, LEGACY_MESSAGE);
    throw new FileError(
      ErrorCodes.UNSUPPORTED_FORMAT,
      file,
      `unsupported file type ${ext ? `.${ext}` : '(no extension)'} (supported: .pdf, .docx, .pptx, .md, .txt)`,
    );
  }
  if (bytes.length === 0) throw new FileError(ErrorCodes.FILE_EMPTY, file, 'empty file');
  switch (format) {
    case 'docx':
    case 'pptx':
      sniffOffice(bytes, format, file);
      break;
    case 'pdf':
      if (!hasPdfHeader(bytes)) {
        const kind = binaryKind(bytes);
        throw new FileError(
          ErrorCodes.FORMAT_MISMATCH,
          file,
          `not a PDF (no %PDF header in the first ${PDF_WINDOW} bytes${kind ? `; ${kind} content` : ''})`,
        );
      }
      break;
    default:
      sniffText(bytes, ext, file);
  }
  return { format };
}

export interface ValidateOptions {
  maxFileBytes: number;
  maxUnzippedBytes: number;
  maxCompressionRatio: number;
}

/**
 * The validate step's preflight: readable, supported extension, size limit, magic bytes agree with the
 * extension, not an encrypted Office container, DOCX/PPTX not a decompression bomb (central directory only;
 * extraction enforces the limits again while inflating, since declared sizes can lie).
 */
export async function validateFile(
  filePath: string,
  options: ValidateOptions,
): Promise<{ format: DocumentFormat; size: number }> {
  let size: number;
  try {
    const info = await stat(filePath);
    if (!info.isFile()) throw new FileError(ErrorCodes.FILE_UNREADABLE, filePath, 'not a regular file');
    size = info.size;
  } catch (error) {
    if (error instanceof FileError) throw error;
    throw unreadable(filePath, error);
  }
  checkNameAndSize(filePath, size, options); // before reading anything
  let bytes: Uint8Array;
  try {
    bytes = await readFile(filePath);
  } catch (error) {
    throw unreadable(filePath, error);
  }
  return { format: checkContent(bytes, filePath, options), size };
}

/**
 * validateFile for bytes in memory (a document archived in SQL): `name` gives the extension and names the file in
 * errors.
 */
export function validateBytes(
  bytes: Uint8Array,
  name: string,
  options: ValidateOptions,
): { format: DocumentFormat; size: number } {
  checkNameAndSize(name, bytes.length, options);
  return { format: checkContent(bytes, name, options), size: bytes.length };
}

/** A supported extension and a size within the limit (the checks that need no bytes). */
function checkNameAndSize(name: string, size: number, options: ValidateOptions): void {
  const ext = extname(name).slice(1);
  if (!SUPPORTED_EXTENSIONS[ext.toLowerCase()]) sniffFormat(new Uint8Array(0), ext, name);
  checkFileSize(name, size, options.maxFileBytes);
}

/** A FILE_TOO_LARGE error naming the file, its size and the limit, when `size` is over `maxFileBytes`. */
export function checkFileSize(file: string, size: number, maxFileBytes: number): void {
  if (size <= maxFileBytes) return;
  throw new FileError(
    ErrorCodes.FILE_TOO_LARGE,
    file,
    `file is too large (${size} bytes, limit ${maxFileBytes})`,
    {
      details: { size, limit: maxFileBytes },
    },
  );
}

/** The format the bytes are (matching the extension), and for DOCX and PPTX a ZIP that is safe to open. */
function checkContent(bytes: Uint8Array, name: string, options: ValidateOptions): DocumentFormat {
  const { format } = sniffFormat(bytes, extname(name).slice(1), name);
  if (format === 'docx' || format === 'pptx') inspectZip(bytes, name, options);
  return format;
}

function unreadable(file: string, error: unknown): FileError {
  const code = (error as { code?: unknown } | null)?.code;
  return new FileError(
    ErrorCodes.FILE_UNREADABLE,
    file,
    `cannot read file${typeof code === 'string' ? ` (${code})` : ''}`,
    {
      cause: error,
    },
  );
}
