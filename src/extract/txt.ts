/**
 * Plain text: encoding detection and paragraphs.
 *
 * Encoding order: a BOM decides (UTF-8, UTF-16 LE/BE); without one, a NUL pattern on one side of the byte
 * pairs means UTF-16 (Latin text has a zero high byte in almost every code unit); then strict UTF-8; and
 * only when that fails a single-byte code page. Windows-1252 is used for every single-byte file: it agrees
 * with ISO-8859-1 on every printable Latin-1 character (ä ö ü ß Ä Ö Ü), and the bytes where they differ
 * (0x80-0x9F) are C1 control codes in Latin-1 that no real text contains, but quotes, dashes and the euro
 * sign in Windows text. The reported name says which of the two the bytes actually needed.
 * The UTF-16 heuristics need Latin script; UTF-16 CJK text without a BOM is not recognised.
 */
import { DocumentBuilder } from './document-builder.js';
import type { ExtractedDocument, ExtractOptions } from './types.js';

export interface DecodedText {
  text: string;
  /** utf-8, utf-8-bom, utf-16le, utf-16be (each with -bom when one was present), windows-1252, iso-8859-1 */
  encoding: string;
}

const SAMPLE_BYTES = 64 * 1024;

export function decodeText(bytes: Uint8Array): DecodedText {
  if (bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    return { text: decodeUtf8(bytes.subarray(3)), encoding: 'utf-8-bom' };
  }
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) {
    return { text: new TextDecoder('utf-16le').decode(bytes.subarray(2)), encoding: 'utf-16le-bom' };
  }
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) {
    return { text: new TextDecoder('utf-16be').decode(bytes.subarray(2)), encoding: 'utf-16be-bom' };
  }
  const utf16 = guessUtf16(bytes);
  if (utf16) return { text: new TextDecoder(utf16).decode(bytes), encoding: utf16 };
  const utf8 = tryUtf8(bytes);
  if (utf8 !== undefined) return { text: utf8, encoding: 'utf-8' };
  let c1 = false;
  for (const byte of bytes) {
    if (byte >= 0x80 && byte <= 0x9f) {
      c1 = true;
      break;
    }
  }
  return { text: decodeWindows1252(bytes), encoding: c1 ? 'windows-1252' : 'iso-8859-1' };
}

/**
 * Windows-1252 0x80-0x9F (undefined positions stay C1 controls, which normalisation removes). Decoded by
 * hand: Node's TextDecoder('windows-1252') takes a Latin-1 fast path and returns C1 controls for these bytes.
 */
const CP1252_HIGH =
  '\u20AC\u0081\u201A\u0192\u201E\u2026\u2020\u2021\u02C6\u2030\u0160\u2039\u0152\u008D\u017D\u008F' +
  '\u0090\u2018\u2019\u201C\u201D\u2022\u2013\u2014\u02DC\u2122\u0161\u203A\u0153\u009D\u017E\u0178';

function decodeWindows1252(bytes: Uint8Array): string {
  const parts: string[] = [];
  const CHUNK = 8192;
  for (let offset = 0; offset < bytes.length; offset += CHUNK) {
    const codes = Array.from(bytes.subarray(offset, offset + CHUNK), (byte) =>
      byte >= 0x80 && byte <= 0x9f ? CP1252_HIGH.charCodeAt(byte - 0x80) : byte,
    );
    parts.push(String.fromCharCode(...codes));
  }
  return parts.join('');
}

/** UTF-16 without BOM: NULs in (nearly) every other byte, all on the same side. */
function guessUtf16(bytes: Uint8Array): 'utf-16le' | 'utf-16be' | undefined {
  const sample = bytes.subarray(0, Math.min(bytes.length, SAMPLE_BYTES) & ~1);
  // almost every file has no NUL at all: a native search says so without counting byte by byte
  if (sample.length < 2 || sample.indexOf(0) < 0) return undefined;
  let even = 0;
  let odd = 0;
  for (let i = 0; i < sample.length; i++) {
    if (sample[i] === 0) {
      if (i % 2 === 0) even++;
      else odd++;
    }
  }
  const pairs = sample.length / 2;
  if (odd >= pairs * 0.3 && even <= odd / 50) return 'utf-16le';
  if (even >= pairs * 0.3 && odd <= even / 50) return 'utf-16be';
  return undefined;
}

/**
 * Strict UTF-8, tolerating only a sequence cut off at the very end of the file (a truncated download is
 * still UTF-8; reading it as Windows-1252 would garble every umlaut in it).
 */
function tryUtf8(bytes: Uint8Array): string | undefined {
  const strict = new TextDecoder('utf-8', { fatal: true });
  try {
    return strict.decode(bytes);
  } catch {
    for (let cut = 1; cut <= 3 && cut < bytes.length; cut++) {
      const lead = bytes[bytes.length - cut]!;
      if (lead < 0xc2) continue; // continuation byte: look further back for the lead byte
      if (lead > 0xf4) return undefined;
      try {
        return `${strict.decode(bytes.subarray(0, bytes.length - cut))}\uFFFD`;
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}

function decodeUtf8(bytes: Uint8Array): string {
  return new TextDecoder('utf-8').decode(bytes);
}

/** Splits text at form feeds (logical pages) and blank lines (paragraphs). */
export function extractTxt(
  bytes: Uint8Array,
  _file: string,
  _options?: ExtractOptions,
): Promise<ExtractedDocument> {
  const { text, encoding } = decodeText(bytes);
  const builder = new DocumentBuilder('txt');
  const pages = splitPages(text);
  pages.forEach((page, index) => {
    builder.startPage(index + 1);
    for (const paragraph of page.split(/\n[ \t]*\n/)) builder.add('paragraph', paragraph);
  });
  if (encoding === 'windows-1252' || encoding === 'iso-8859-1') {
    builder.warnings.push(`not valid UTF-8: decoded as ${encoding}`);
  }
  return Promise.resolve(builder.build({ encoding, logicalPages: pages.length }));
}

/** Form feeds separate logical pages; a form feed at the very end does not open an empty page. */
export function splitPages(text: string): string[] {
  const pages = (text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text).split('\f');
  while (pages.length > 1 && pages[pages.length - 1]!.trim() === '') pages.pop();
  return pages;
}
