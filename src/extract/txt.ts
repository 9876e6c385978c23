/**
 * Plain text: encoding detection and paragraphs.
 *
 * Encoding order: a BOM decides (UTF-8, UTF-32 LE/BE, UTF-16 LE/BE); without one, a NUL pattern on one side of
 * the byte pairs means UTF-16 (Latin text has a zero high byte in almost every code unit); then strict UTF-8; and
 * only when that fails a single-byte code page. Windows-1252 is used for every single-byte file: it agrees
 * with ISO-8859-1 on every printable Latin-1 character (ä ö ü ß Ä Ö Ü), and the bytes where they differ
 * (0x80-0x9F) are C1 control codes in Latin-1 that no real text contains, but quotes, dashes and the euro
 * sign in Windows text. The reported name says which of the two the bytes actually needed.
 * Bytes that break the encoding they claim (a UTF-16 file with an odd byte, unpaired surrogates, invalid UTF-8
 * after a UTF-8 BOM) become U+FFFD, and the result says so in a warning, as it does for the code page fallback
 * and for a last character cut off: the text is kept, and the run log shows what was wrong with it.
 * The UTF-16 heuristics need Latin script; UTF-16 CJK text without a BOM is not recognised.
 */
import { DocumentBuilder } from './document-builder.js';
import { normalizeText } from './normalize.js';
import { defaultExtractOptions, type ExtractedDocument, type ExtractOptions } from './types.js';

export interface DecodedText {
  text: string;
  /**
   * utf-8, utf-16le, utf-16be (each with -bom when one was present), utf-32le-bom, utf-32be-bom, windows-1252,
   * iso-8859-1
   */
  encoding: string;
  /** set when the bytes were not all valid in that encoding, or needed the code page fallback */
  warning?: string;
}

const SAMPLE_BYTES = 64 * 1024;

/** The text as its byte order mark says it is encoded; undefined when it starts with none. */
export function decodeByByteOrderMark(bytes: Uint8Array): DecodedText | undefined {
  if (startsWith(bytes, 0xef, 0xbb, 0xbf)) return decodeUtf8(bytes.subarray(3), 'utf-8-bom');
  if (startsWith(bytes, 0xff, 0xfe, 0, 0)) return decodeUtf32(bytes.subarray(4), true);
  if (startsWith(bytes, 0, 0, 0xfe, 0xff)) return decodeUtf32(bytes.subarray(4), false);
  if (startsWith(bytes, 0xff, 0xfe)) return decodeUtf16(bytes.subarray(2), 'utf-16le', 'utf-16le-bom');
  if (startsWith(bytes, 0xfe, 0xff)) return decodeUtf16(bytes.subarray(2), 'utf-16be', 'utf-16be-bom');
  return undefined;
}

export function decodeText(bytes: Uint8Array): DecodedText {
  const marked = decodeByByteOrderMark(bytes);
  if (marked) return marked;
  const utf16 = guessUtf16(bytes);
  if (utf16) return decodeUtf16(bytes, utf16, utf16);
  const utf8 = strictUtf8(bytes, 'utf-8');
  if (utf8) return utf8;
  const mixed = mostlyUtf8(bytes);
  if (mixed) return mixed;
  let c1 = false;
  for (const byte of bytes) {
    if (byte >= 0x80 && byte <= 0x9f) {
      c1 = true;
      break;
    }
  }
  const encoding = c1 ? 'windows-1252' : 'iso-8859-1';
  return { text: decodeWindows1252(bytes), encoding, warning: `not valid UTF-8: decoded as ${encoding}` };
}

const CUT_OFF = 'the last character is cut off (truncated file?): replaced with U+FFFD';

const startsWith = (bytes: Uint8Array, ...magic: number[]): boolean =>
  bytes.length >= magic.length && magic.every((byte, i) => bytes[i] === byte);

const withWarning = (text: string, encoding: string, warning: string | undefined): DecodedText =>
  warning === undefined ? { text, encoding } : { text, encoding, warning };

/** Strict UTF-8 (a cut-off last character tolerated, with a warning), or undefined. */
function strictUtf8(bytes: Uint8Array, encoding: string): DecodedText | undefined {
  const strict = tryUtf8(bytes);
  return strict && withWarning(strict.text, encoding, strict.cut ? CUT_OFF : undefined);
}

/** After a UTF-8 BOM: strict UTF-8, else invalid bytes replaced. */
function decodeUtf8(bytes: Uint8Array, encoding: string): DecodedText {
  const strict = strictUtf8(bytes, encoding);
  if (strict) return strict;
  return {
    text: new TextDecoder('utf-8').decode(bytes),
    encoding,
    warning: 'not valid UTF-8 despite its byte order mark: invalid bytes replaced with U+FFFD',
  };
}

function decodeUtf16(bytes: Uint8Array, label: 'utf-16le' | 'utf-16be', encoding: string): DecodedText {
  try {
    return { text: new TextDecoder(label, { fatal: true }).decode(bytes), encoding };
  } catch {
    const odd = bytes.length % 2 === 1 ? ' (an odd number of bytes)' : '';
    return {
      text: new TextDecoder(label).decode(bytes),
      encoding,
      warning: `not valid ${label.toUpperCase()}${odd}: invalid code units replaced with U+FFFD`,
    };
  }
}

/** UTF-32 (only with a BOM: TextDecoder has no UTF-32); code points that cannot be text become U+FFFD. */
function decodeUtf32(bytes: Uint8Array, littleEndian: boolean): DecodedText {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const whole = bytes.length - (bytes.length % 4);
  const parts: string[] = [];
  let codes: number[] = [];
  let invalid = 0;
  for (let at = 0; at < whole; at += 4) {
    const code = view.getUint32(at, littleEndian);
    const valid = code <= 0x10ffff && (code < 0xd800 || code > 0xdfff);
    if (!valid) invalid++;
    codes.push(valid ? code : 0xfffd);
    if (codes.length === 8192) {
      parts.push(String.fromCodePoint(...codes));
      codes = [];
    }
  }
  if (whole < bytes.length) {
    invalid++;
    codes.push(0xfffd);
  }
  parts.push(String.fromCodePoint(...codes));
  const encoding = littleEndian ? 'utf-32le-bom' : 'utf-32be-bom';
  const name = littleEndian ? 'UTF-32LE' : 'UTF-32BE';
  return withWarning(
    parts.join(''),
    encoding,
    invalid > 0
      ? `not valid ${name}: ${invalid} invalid code ${invalid === 1 ? 'unit' : 'units'} replaced with U+FFFD`
      : undefined,
  );
}

/**
 * Windows-1252 0x80-0x9F (undefined positions stay C1 controls, which normalisation removes). Decoded by
 * hand: Node's TextDecoder('windows-1252') takes a Latin-1 fast path and returns C1 controls for these bytes.
 */
const CP1252_HIGH =
  '\u20AC\u0081\u201A\u0192\u201E\u2026\u2020\u2021\u02C6\u2030\u0160\u2039\u0152\u008D\u017D\u008F' +
  '\u0090\u2018\u2019\u201C\u201D\u2022\u2013\u2014\u02DC\u2122\u0161\u203A\u0153\u009D\u017E\u0178';

export function decodeWindows1252(bytes: Uint8Array): string {
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

/** Length of the valid UTF-8 sequence of more than one byte at `at`, or 0 (an invalid or ASCII byte). */
function utf8SequenceAt(bytes: Uint8Array, at: number): number {
  const lead = bytes[at]!;
  const cont = (i: number, low = 0x80, high = 0xbf) => {
    const byte = bytes[at + i];
    return byte !== undefined && byte >= low && byte <= high;
  };
  if (lead >= 0xc2 && lead <= 0xdf) return cont(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    const second = lead === 0xe0 ? cont(1, 0xa0) : lead === 0xed ? cont(1, 0x80, 0x9f) : cont(1);
    return second && cont(2) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    const second = lead === 0xf0 ? cont(1, 0x90) : lead === 0xf4 ? cont(1, 0x80, 0x8f) : cont(1);
    return second && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/**
 * UTF-8 with a few stray single-byte characters (a line pasted from a Windows-1252 file): when the valid UTF-8
 * sequences of more than one byte outnumber the bytes that fit none, those bytes alone are read as Windows-1252
 * and the rest as UTF-8, instead of the whole file as Windows-1252 (which would garble every umlaut in it). A
 * Windows-1252 file has next to no byte pairs that happen to be valid UTF-8, so it still falls back as a whole.
 */
/** The UTF-8 bytes of the windows-1252 character of each byte 0x80-0xFF (at most three each). */
const WINDOWS_1252_AS_UTF8: readonly Uint8Array[] = Array.from({ length: 128 }, (_, k) =>
  new TextEncoder().encode(decodeWindows1252(Uint8Array.of(0x80 + k))),
);

function mostlyUtf8(bytes: Uint8Array): DecodedText | undefined {
  let valid = 0;
  const stray: number[] = [];
  for (let at = 0; at < bytes.length; ) {
    if (bytes[at]! < 0x80) {
      at++;
      continue;
    }
    const length = utf8SequenceAt(bytes, at);
    if (length > 0) {
      valid++;
      at += length;
    } else {
      stray.push(at);
      at++;
    }
  }
  if (valid <= stray.length) return undefined;
  // each stray byte replaced by the UTF-8 of its windows-1252 character, then one decoder call: a decoder call per
  // stray byte took seconds for a few megabytes of them
  const mended = new Uint8Array(bytes.length + 2 * stray.length);
  let out = 0;
  let from = 0;
  for (const at of stray) {
    mended.set(bytes.subarray(from, at), out);
    out += at - from;
    const sequence = WINDOWS_1252_AS_UTF8[bytes[at]! - 0x80]!;
    mended.set(sequence, out);
    out += sequence.length;
    from = at + 1;
  }
  mended.set(bytes.subarray(from), out);
  out += bytes.length - from;
  const n = stray.length;
  return {
    text: new TextDecoder('utf-8').decode(mended.subarray(0, out)),
    encoding: 'utf-8',
    warning: `not valid UTF-8 in ${n} ${n === 1 ? 'byte' : 'bytes'}: decoded as windows-1252 there, the rest as UTF-8`,
  };
}

/** code units below which a file without BOM must have NULs in two fifths of them to be read as UTF-16 */
const SHORT_UTF16_PAIRS = 32;

/**
 * UTF-16 without BOM: NULs in many code units' high byte (at least a fifth of them: Latin text has one in nearly
 * every code unit, Cyrillic or Greek text in its spaces, digits and punctuation), all on the same side. One rule
 * for the format check (sniff.ts) and the decoder, so that a file the check lets through is decoded as UTF-16.
 */
export function guessUtf16(bytes: Uint8Array): 'utf-16le' | 'utf-16be' | undefined {
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
  // a whole file of an odd length is no UTF-16; in a short one a stray NUL or two are no sign of it (Latin text in
  // UTF-16 has one in nearly every code unit)
  if (sample.length === bytes.length - 1) return undefined;
  const pairs = sample.length / 2;
  const share = pairs < SHORT_UTF16_PAIRS ? 0.4 : 0.2;
  if (odd >= pairs * share && even <= odd / 50) return 'utf-16le';
  if (even >= pairs * share && odd <= even / 50) return 'utf-16be';
  return undefined;
}

/**
 * Strict UTF-8, tolerating only a sequence cut off at the very end of the file (a truncated download is
 * still UTF-8; reading it as Windows-1252 would garble every umlaut in it): then `cut` is set and the text ends
 * with U+FFFD. Only when the rest has UTF-8 of more than one byte in it: a file that is ASCII but for its last
 * byte is a legacy one ending in a letter ("Mit freundlichem Gruß" in Latin-1), not UTF-8 cut short.
 */
function tryUtf8(bytes: Uint8Array): { text: string; cut: boolean } | undefined {
  const strict = new TextDecoder('utf-8', { fatal: true });
  try {
    return { text: strict.decode(bytes), cut: false };
  } catch {
    for (let cut = 1; cut <= 3 && cut < bytes.length; cut++) {
      const lead = bytes[bytes.length - cut]!;
      if (lead >= 0x80 && lead <= 0xbf) continue; // continuation byte: look further back for the lead byte
      // a lead byte whose sequence the end of the file cut short; anything else is not a cut
      const needs =
        lead >= 0xf0 && lead <= 0xf4 ? 4 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xc2 ? 2 : 0;
      if (lead > 0xf4 || cut >= needs) return undefined;
      if (!bytes.subarray(0, bytes.length - cut).some((b) => b >= 0x80)) return undefined;
      try {
        return { text: `${strict.decode(bytes.subarray(0, bytes.length - cut))}\uFFFD`, cut: true };
      } catch {
        return undefined;
      }
    }
    return undefined;
  }
}

/** Splits text at form feeds (logical pages) and blank lines (paragraphs). */
export function extractTxt(
  bytes: Uint8Array,
  _file: string,
  options?: ExtractOptions,
): Promise<ExtractedDocument> {
  const { text, encoding, warning } = decodeText(bytes);
  const builder = new DocumentBuilder('txt');
  const pages = splitPages(text, options?.maxPages, builder.warnings);
  pages.forEach((page, index) => {
    builder.startPage(index + 1);
    // normalised first: a line of only a no-break space or a control character, or two paragraph separators
    // (U+2029), is a blank line too, and a word a soft hyphen breaks at a line end is one word again
    for (const paragraph of normalizeText(page).split(/\n[^\S\n]*\n/)) builder.add('paragraph', paragraph);
  });
  if (warning) builder.warnings.push(warning);
  return Promise.resolve(builder.build({ encoding, logicalPages: pages.length }));
}

/**
 * Why a text or Markdown file of some bytes has no text: "no text (only a byte order mark)", what Notepad saves of
 * an emptied file. `held`: what the file holds instead (heldInsteadOfText, markdownHeldInsteadOfText).
 */
export function noTextReason(held: readonly string[]): string {
  const list = held.length > 1 ? `${held.slice(0, -1).join(', ')} and ${held[held.length - 1]}` : held[0];
  return list === undefined ? 'no text' : `no text (only ${list})`;
}

/** What a plain text file that extracts to no text holds instead (for noTextReason). */
export function heldInsteadOfText(bytes: Uint8Array): string[] {
  const { text, encoding } = decodeText(bytes);
  return [...byteOrderMarkOf(encoding), ...blankTextOf(text)];
}

/** 'a byte order mark' when the text was decoded by one (for noTextReason) */
export const byteOrderMarkOf = (encoding: string): string[] =>
  encoding.endsWith('-bom') ? ['a byte order mark'] : [];

/** what the decoded `text` of a file without text is made of (for noTextReason) */
export const blankTextOf = (text: string): string[] =>
  text === '' ? [] : text.trim() === '' ? ['white space'] : ['invisible characters'];

/**
 * Form feeds separate logical pages; a form feed at the very end does not open an empty page. At most `maxPages`
 * (the extract step's `max_pages`): the form feeds after the last one that opens a page are line breaks, said in
 * `warnings`. A file of form feeds made a page of every character (8 MB: 4 million pages, 1.3 GB, as many rows).
 */
export function splitPages(
  text: string,
  maxPages = defaultExtractOptions.maxPages,
  warnings?: string[],
): string[] {
  const unified = text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
  const pages: string[] = [];
  let start = 0;
  for (let feed = unified.indexOf('\f'); feed >= 0; feed = unified.indexOf('\f', start)) {
    if (pages.length === maxPages - 1) {
      if (unified.slice(feed + 1).trim() !== '') {
        warnings?.push(`more than ${maxPages} pages (form feeds): the rest is read as the last page`);
        break;
      }
      // only white space after it: the page it would open is dropped below anyway
      pages.push(unified.slice(start, feed));
      start = unified.length;
      break;
    }
    pages.push(unified.slice(start, feed));
    start = feed + 1;
  }
  const last = unified.slice(start);
  pages.push(pages.length === maxPages - 1 ? last.replace(/\f/g, '\n') : last);
  while (pages.length > 1 && pages[pages.length - 1]!.trim() === '') pages.pop();
  return pages;
}
