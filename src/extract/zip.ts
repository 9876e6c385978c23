/**
 * A small, bounds-checked ZIP reader for DOCX/PPTX packages.
 *
 * Why not fflate's `unzipSync`: it inflates every accepted entry at once, and it trusts the sizes the archive
 * declares. Office packages are read part by part, and the sizes in the central directory are attacker
 * controlled. So we parse the central directory ourselves (every offset checked against the buffer), refuse
 * an archive whose DECLARED sizes or ratios are over the limits before anything is inflated, and then inflate
 * each entry with fflate's streaming `Inflate` in small input slices, counting the output and stopping as soon
 * as an entry grows beyond what it declared or the whole archive beyond its budget. A 200 MB entry of zeros
 * that claims to be 1 KB is therefore stopped after about 1 KB plus one slice, never allocated whole.
 */
import { crc32 } from 'node:zlib';
import { Inflate } from 'fflate';
import { ErrorCodes, FileError } from '../errors.js';
import { decodeWindows1252 } from './txt.js';

export interface ZipLimits {
  /** cap on the sum of all (declared and actual) inflated bytes */
  maxUnzippedBytes: number;
  /** cap on uncompressed/compressed for one entry (checked for entries above RATIO_GRACE_BYTES) */
  maxCompressionRatio: number;
  /** cap on the number of entries (default 20 000) */
  maxEntries?: number;
}

export interface ZipEntryInfo {
  name: string;
  compressedSize: number;
  /** uncompressed size as declared by the central directory (may lie; enforced while inflating) */
  size: number;
  /** 0 = stored, 8 = deflate */
  method: number;
  /** CRC-32 of the uncompressed bytes, as the central directory declares it (checked when the entry is read) */
  crc32: number;
  encrypted: boolean;
  /** offset of the local file header */
  offset: number;
}

export interface ZipArchive {
  names(): string[];
  has(name: string): boolean;
  entry(name: string): ZipEntryInfo | undefined;
  readBytes(name: string): Uint8Array;
  /** UTF-8 (or UTF-16 with BOM) text, BOM stripped */
  readText(name: string): string;
  /** bytes inflated so far by this archive object */
  readonly inflatedBytes: number;
}

/** Small entries cannot do much harm whatever their ratio (tiny XML parts of zeros compress 1000:1). */
export const RATIO_GRACE_BYTES = 1024 * 1024;
const DEFAULT_MAX_ENTRIES = 20_000;
/** input slice fed to the inflater at a time: at most ~1032x output per slice (deflate's maximum ratio) */
const INFLATE_SLICE = 4096;

const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_LOCAL = 0x04034b50;

const corrupt = (file: string, detail?: string): FileError =>
  new FileError(
    ErrorCodes.CORRUPT_FILE,
    file,
    `truncated or corrupt ZIP container${detail ? ` (${detail})` : ''}`,
  );

const bomb = (file: string, detail: string): FileError =>
  new FileError(ErrorCodes.ARCHIVE_BOMB, file, `archive looks like a decompression bomb: ${detail}`);

/** Bounds-checked little-endian reads; any read outside the buffer is a corrupt container. */
class Reader {
  private readonly view: DataView;
  constructor(
    readonly bytes: Uint8Array,
    private readonly file: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  private check(offset: number, length: number): void {
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + length > this.bytes.length) {
      throw corrupt(this.file, 'structure points outside the file');
    }
  }
  u16(offset: number): number {
    this.check(offset, 2);
    return this.view.getUint16(offset, true);
  }
  u32(offset: number): number {
    this.check(offset, 4);
    return this.view.getUint32(offset, true);
  }
  u64(offset: number): number {
    this.check(offset, 8);
    const value = this.view.getBigUint64(offset, true);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw corrupt(this.file, 'ZIP64 value out of range');
    return Number(value);
  }
  slice(offset: number, length: number): Uint8Array {
    this.check(offset, length);
    return this.bytes.subarray(offset, offset + length);
  }
}

const utf8 = new TextDecoder('utf-8');

function findEndOfCentralDirectory(reader: Reader): number {
  const bytes = reader.bytes;
  const lowest = Math.max(0, bytes.length - 22 - 0xffff);
  for (let i = bytes.length - 22; i >= lowest; i--) {
    if (bytes[i] === 0x50 && bytes[i + 1] === 0x4b && bytes[i + 2] === 0x05 && bytes[i + 3] === 0x06) {
      // the comment must fit into the file, otherwise this is a stray signature inside data
      if (i + 22 + reader.u16(i + 20) <= bytes.length) return i;
    }
  }
  return -1;
}

/** Reads the central directory only: names, declared sizes, methods. Nothing is inflated. */
export function listZipEntries(
  bytes: Uint8Array,
  file: string,
  maxEntries = DEFAULT_MAX_ENTRIES,
): ZipEntryInfo[] {
  const reader = new Reader(bytes, file);
  if (bytes.length < 22) throw corrupt(file, 'too short for a ZIP');
  const eocd = findEndOfCentralDirectory(reader);
  if (eocd < 0) throw corrupt(file, 'end of central directory not found');
  if (reader.u32(eocd) !== SIG_EOCD) throw corrupt(file);
  let count = reader.u16(eocd + 10);
  let cdSize = reader.u32(eocd + 12);
  let cdOffset = reader.u32(eocd + 16);
  let cdEnd = eocd;
  if (
    (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) &&
    eocd >= 20 &&
    reader.u32(eocd - 20) === SIG_ZIP64_LOCATOR
  ) {
    const z64 = reader.u64(eocd - 20 + 8);
    if (reader.u32(z64) !== SIG_ZIP64_EOCD) throw corrupt(file, 'bad ZIP64 end of central directory');
    count = reader.u64(z64 + 32);
    cdSize = reader.u64(z64 + 40);
    cdOffset = reader.u64(z64 + 48);
    cdEnd = z64;
  }
  if (count > maxEntries) throw bomb(file, `${count} entries (limit ${maxEntries})`);
  // data prepended to the archive (self-extractors) shifts every offset by the same amount
  const shift = cdEnd - cdSize - cdOffset;
  if (shift < 0) throw corrupt(file, 'central directory outside the file');

  const entries: ZipEntryInfo[] = [];
  let pos = cdOffset + shift;
  for (let i = 0; i < count; i++) {
    if (reader.u32(pos) !== SIG_CENTRAL) throw corrupt(file, 'bad central directory entry');
    const flags = reader.u16(pos + 8);
    const method = reader.u16(pos + 10);
    const crc = reader.u32(pos + 16);
    let compressedSize = reader.u32(pos + 20);
    let size = reader.u32(pos + 24);
    const nameLength = reader.u16(pos + 28);
    const extraLength = reader.u16(pos + 30);
    const commentLength = reader.u16(pos + 32);
    let offset = reader.u32(pos + 42);
    const name = utf8.decode(reader.slice(pos + 46, nameLength));
    // ZIP64 extra field: only the values set to 0xFFFFFFFF are present, in this order
    let extra = pos + 46 + nameLength;
    const extraEnd = extra + extraLength;
    while (extra + 4 <= extraEnd) {
      const id = reader.u16(extra);
      const length = reader.u16(extra + 2);
      if (id === 0x0001) {
        let field = extra + 4;
        if (size === 0xffffffff) {
          size = reader.u64(field);
          field += 8;
        }
        if (compressedSize === 0xffffffff) {
          compressedSize = reader.u64(field);
          field += 8;
        }
        if (offset === 0xffffffff) offset = reader.u64(field);
      }
      extra += 4 + length;
    }
    entries.push({
      name: name.replace(/\\/g, '/').replace(/^\/+/, ''),
      compressedSize,
      size,
      method,
      crc32: crc,
      encrypted: (flags & 1) === 1,
      offset: offset + shift,
    });
    pos = extraEnd + commentLength;
  }
  refuseOverlaps(reader, entries, file);
  return entries;
}

/**
 * Refuses entries whose data overlap: many directory entries pointing into one local entry are a bomb made of
 * references (a 31 KB file of 480 entries on one 1 MiB part inflated to 480 MiB), and no writer makes them.
 */
function refuseOverlaps(reader: Reader, entries: readonly ZipEntryInfo[], file: string): void {
  const sorted = [...entries].sort((a, b) => a.offset - b.offset);
  let previous: ZipEntryInfo | undefined;
  let previousEnd = 0;
  for (const entry of sorted) {
    if (previous && entry.offset < previousEnd)
      throw bomb(file, `entries ${previous.name} and ${entry.name} overlap in the archive`);
    // the local header's own name and extra field lengths, where it is one (a broken one fails when read)
    const local = entry.offset + 30 <= reader.bytes.length && reader.u32(entry.offset) === SIG_LOCAL;
    const header = local ? 30 + reader.u16(entry.offset + 26) + reader.u16(entry.offset + 28) : 30;
    previous = entry;
    previousEnd = entry.offset + header + entry.compressedSize;
  }
}

/** Checks the declared sizes and ratios against the limits; throws ARCHIVE_BOMB. Inflates nothing. */
export function checkDeclaredSizes(entries: ZipEntryInfo[], file: string, limits: ZipLimits): void {
  let total = 0;
  for (const entry of entries) {
    total += entry.size;
    if (total > limits.maxUnzippedBytes) {
      throw bomb(file, `declared uncompressed size exceeds the limit of ${limits.maxUnzippedBytes} bytes`);
    }
    if (
      entry.size > RATIO_GRACE_BYTES &&
      entry.size / Math.max(entry.compressedSize, 1) > limits.maxCompressionRatio
    ) {
      throw bomb(
        file,
        `entry ${entry.name} declares ${entry.size} bytes from ${entry.compressedSize} (ratio limit ${limits.maxCompressionRatio})`,
      );
    }
  }
}

/** Central directory listing plus the declared-size check, for the validate step. */
export function inspectZip(bytes: Uint8Array, file: string, limits: ZipLimits): ZipEntryInfo[] {
  const entries = listZipEntries(bytes, file, limits.maxEntries ?? DEFAULT_MAX_ENTRIES);
  checkDeclaredSizes(entries, file, limits);
  return entries;
}

/** The encoding an XML declaration names (`<?xml version="1.0" encoding="ISO-8859-1"?>`), when it names one. */
const XML_DECLARED_ENCODING = /^<\?xml[^>]{0,200}?\sencoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})["']/;

/**
 * A part's text: UTF-16 by its BOM, else the encoding its XML declaration names (legal XML may be ISO-8859-1 or
 * windows-1252; read as UTF-8 its umlauts became U+FFFD), else UTF-8. The declaration of a part read otherwise than
 * as UTF-8 is made to say UTF-8, which the text now is.
 */
export function decodeText(bytes: Uint8Array): string {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe)
    return new TextDecoder('utf-16le').decode(bytes);
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff)
    return new TextDecoder('utf-16be').decode(bytes);
  const declared = XML_DECLARED_ENCODING.exec(latin1.decode(bytes.subarray(0, 256)))?.[1];
  if (declared && !/^utf-?8$/i.test(declared)) {
    const decoder = decoderFor(declared);
    if (decoder && decoder.encoding !== 'utf-8' && !decoder.encoding.startsWith('utf-16')) {
      // "ISO-8859-1" is windows-1252 to TextDecoder, whose Node fast path gets 0x80-0x9F wrong (see txt.ts)
      const text = decoder.encoding === 'windows-1252' ? decodeWindows1252(bytes) : decoder.decode(bytes);
      return text.replace(XML_DECLARED_ENCODING, (declaration: string) =>
        declaration.replace(/(encoding\s*=\s*["'])[^"']*/, '$1UTF-8'),
      );
    }
  }
  // TextDecoder strips a UTF-8 BOM by default
  return utf8.decode(bytes);
}

const latin1 = new TextDecoder('latin1');

/** A decoder for an encoding's name, or undefined for a name TextDecoder does not know (then: UTF-8). */
const decoderFor = (label: string) => {
  try {
    return new TextDecoder(label);
  } catch {
    return undefined;
  }
};

export function openZip(bytes: Uint8Array, file: string, limits: ZipLimits): ZipArchive {
  return zipArchive(bytes, inspectZip(bytes, file, limits), file, limits);
}

/**
 * The archive of entries listed before (listZipEntries), read within `limits` as openZip reads; their declared sizes
 * are not checked first: for reading a small part or two of an archive that is not opened whole (sniff.ts).
 */
export function zipArchive(
  bytes: Uint8Array,
  entries: readonly ZipEntryInfo[],
  file: string,
  limits: ZipLimits,
): ZipArchive {
  const byName = new Map<string, ZipEntryInfo>();
  const byLowerName = new Map<string, ZipEntryInfo>();
  for (const entry of entries) {
    if (entry.name.endsWith('/')) continue; // directory
    if (!byName.has(entry.name)) byName.set(entry.name, entry);
    // OPC part names are case-insensitive
    if (!byLowerName.has(entry.name.toLowerCase())) byLowerName.set(entry.name.toLowerCase(), entry);
  }
  const reader = new Reader(bytes, file);
  let inflatedBytes = 0;

  const find = (name: string): ZipEntryInfo | undefined => {
    const clean = name.replace(/^\/+/, '');
    return byName.get(clean) ?? byLowerName.get(clean.toLowerCase());
  };

  const readBytes = (name: string): Uint8Array => {
    const entry = find(name);
    if (!entry) throw corrupt(file, `entry ${name} missing`);
    if (entry.encrypted) {
      throw new FileError(ErrorCodes.ENCRYPTED_DOCUMENT, file, `ZIP entry ${entry.name} is encrypted`);
    }
    if (reader.u32(entry.offset) !== SIG_LOCAL) throw corrupt(file, `bad local header for ${entry.name}`);
    const dataStart = entry.offset + 30 + reader.u16(entry.offset + 26) + reader.u16(entry.offset + 28);
    const data = reader.slice(dataStart, entry.compressedSize);
    const budget = limits.maxUnzippedBytes - inflatedBytes;
    if (entry.method === 0) {
      if (entry.compressedSize !== entry.size)
        throw corrupt(file, `stored entry ${entry.name} has inconsistent sizes`);
      if (data.length > budget) throw bomb(file, `inflated content exceeds ${limits.maxUnzippedBytes} bytes`);
      inflatedBytes += data.length;
      return checked(entry, data.slice());
    }
    if (entry.method !== 8)
      throw corrupt(file, `entry ${entry.name} uses unsupported compression method ${entry.method}`);
    const out = inflateCapped(data, entry, budget, file, limits);
    inflatedBytes += out.length;
    return checked(entry, out);
  };

  /** Damage that still inflates to the declared size (a changed literal, a stored entry) shows in the checksum. */
  const checked = (entry: ZipEntryInfo, bytes: Uint8Array): Uint8Array => {
    if (crc32(bytes) >>> 0 !== entry.crc32)
      throw corrupt(file, `entry ${entry.name} does not match its CRC-32 checksum`);
    return bytes;
  };

  return {
    names: () => [...byName.keys()],
    has: (name) => find(name) !== undefined,
    entry: find,
    readBytes,
    readText: (name) => decodeText(readBytes(name)),
    get inflatedBytes() {
      return inflatedBytes;
    },
  };
}

/**
 * Inflates one entry in small slices. Output is kept only up to the declared size; past it the inflater goes
 * on counting (bounded by the ratio and budget limits) so that a directory that lies about a bomb is reported
 * as ARCHIVE_BOMB, and a stream that merely does not match its size (damage) as CORRUPT_FILE. Never holds
 * more than the declared size plus one slice's output.
 */
function inflateCapped(
  data: Uint8Array,
  entry: ZipEntryInfo,
  budget: number,
  file: string,
  limits: ZipLimits,
): Uint8Array {
  const chunks: Uint8Array[] = [];
  let produced = 0;
  let finished = false;
  const inflater = new Inflate((chunk, final) => {
    produced += chunk.length;
    if (produced > budget) throw bomb(file, `inflated content exceeds ${limits.maxUnzippedBytes} bytes`);
    if (produced > RATIO_GRACE_BYTES && produced / Math.max(data.length, 1) > limits.maxCompressionRatio) {
      throw bomb(
        file,
        `entry ${entry.name} inflates beyond its declared ${entry.size} bytes and the compression ratio limit ${limits.maxCompressionRatio}`,
      );
    }
    if (chunk.length > 0 && produced <= entry.size) chunks.push(chunk);
    if (final) finished = true;
  });
  try {
    if (data.length === 0) inflater.push(new Uint8Array(0), true);
    for (let at = 0; at < data.length; at += INFLATE_SLICE) {
      inflater.push(data.subarray(at, at + INFLATE_SLICE), at + INFLATE_SLICE >= data.length);
    }
  } catch (error) {
    if (error instanceof FileError) throw error;
    throw corrupt(file, `entry ${entry.name}`);
  }
  if (!finished || produced !== entry.size) {
    throw corrupt(file, `entry ${entry.name} inflated to ${produced} bytes, ${entry.size} declared`);
  }
  const out = new Uint8Array(produced);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
