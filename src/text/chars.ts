import { endianness } from 'node:os';

/**
 * Character classes on UTF-16 code units, shared by the tokenizer, the sentence splitter and the quality
 * figures. Code-unit tests instead of Unicode regexes keep the hot loops free of allocation.
 */
export function isAsciiLetter(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
}

/** Letters beyond ASCII: Latin-1/Latin Extended letters and everything from Greek upwards (scripts, CJK). */
export function isOtherLetter(c: number): boolean {
  if (c < 0xc0) return c === 0xaa || c === 0xb5 || c === 0xba;
  if (c === 0xd7 || c === 0xf7) return false; // × ÷
  if (c >= 0x2000 && c <= 0x2bff) return false; // general punctuation, symbols, arrows, box drawing
  if (c >= 0x3000 && c <= 0x303f) return false; // CJK punctuation
  if (c >= 0xfe30 && c <= 0xfe4f) return false;
  if (c >= 0xff00 && c <= 0xff20) return false;
  if (c >= 0xd800 && c <= 0xdfff) return false; // surrogates: emoji and the like count as symbols
  return true;
}

export function isLetter(c: number): boolean {
  return isAsciiLetter(c) || isOtherLetter(c);
}

export function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** Letters and digits: the characters a cut must not fall between. */
export function isWordChar(c: number): boolean {
  return isDigit(c) || isLetter(c);
}

export function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 13 || c === 0xa0 || c === 0x202f || c === 0x2009;
}

/** Upper-case letter (ASCII fast path; other letters by case mapping). */
export function isUpperAt(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c >= 65 && c <= 90) return true;
  if (c < 0xc0 || !isOtherLetter(c)) return false;
  const ch = text[i] as string;
  return ch.toLowerCase() !== ch;
}

/** Lower-case letter (ASCII fast path; other letters by case mapping). */
export function isLowerAt(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c >= 97 && c <= 122) return true;
  if (c < 0xc0 || !isOtherLetter(c)) return false;
  const ch = text[i] as string;
  return ch.toUpperCase() !== ch;
}

export const CLASS_OTHER = 0;
export const CLASS_LETTER = 1;
export const CLASS_DIGIT = 2;
export const CLASS_SPACE = 3;
export const CLASS_NEWLINE = 4;

/** A value for each character class, for a table of every code unit (charClassTable). */
export interface ClassValues {
  other: number;
  letter: number;
  digit: number;
  space: number;
  newline: number;
}

/**
 * A table of every UTF-16 code unit (64 Ki entries) holding the value of its class: the classes of isSpace, isDigit
 * and isLetter (a line break its own), filled range by range. The tokenizer and the sentence splitter build their
 * tables with it too: testing the 65,536 code units one by one took ~9 ms per table of the start of every command
 * that loads the text modules. A unit test checks CHAR_CLASS against the functions, code unit by code unit.
 */
export function charClassTable(values: ClassValues): Uint8Array {
  const table = new Uint8Array(65536).fill(values.other);
  // letters (isLetter): ASCII, ª µ º, and from U+00C0 on everything but × ÷ and the ranges isOtherLetter leaves out
  table.fill(values.letter, 65, 91);
  table.fill(values.letter, 97, 123);
  for (const c of [0xaa, 0xb5, 0xba]) table[c] = values.letter;
  table.fill(values.letter, 0xc0);
  for (const c of [0xd7, 0xf7]) table[c] = values.other;
  for (const [from, to] of [
    [0x2000, 0x2bff],
    [0x3000, 0x303f],
    [0xfe30, 0xfe4f],
    [0xff00, 0xff20],
    [0xd800, 0xdfff],
  ] as const)
    table.fill(values.other, from, to + 1);
  table.fill(values.digit, 48, 58);
  for (const c of [32, 9, 13, 0xa0, 0x202f, 0x2009]) table[c] = values.space;
  table[10] = values.newline;
  return table;
}

/**
 * Class of every UTF-16 code unit (64 KiB, built once): one array read per character instead of a chain
 * of range tests keeps the tokenizer and the quality scan at memory speed.
 */
export const CHAR_CLASS: Uint8Array = charClassTable({
  other: CLASS_OTHER,
  letter: CLASS_LETTER,
  digit: CLASS_DIGIT,
  space: CLASS_SPACE,
  newline: CLASS_NEWLINE,
});

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * The UTF-16 code units of `text` as a typed array. The hot loops (tokenizer, sentence splitter) read a
 * Uint16Array about 1.5 times faster than `charCodeAt`, and the copy is a native memcpy (a few ms for
 * 10 MB), so a pass that walks the whole text pays for it many times over.
 */
export function codeUnits(text: string): Uint16Array {
  if (LITTLE_ENDIAN) {
    const buf = Buffer.from(text, 'utf16le');
    if ((buf.byteOffset & 1) === 0) return new Uint16Array(buf.buffer, buf.byteOffset, text.length);
  }
  const codes = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) codes[i] = text.charCodeAt(i);
  return codes;
}

/** Largest text whose code units stay in the shared buffer between calls (8 MB of memory). */
const SCRATCH_MAX_CHARS = 1 << 22;
let scratch: Uint16Array | null = null;
let scratchBytes: Buffer | null = null;

/**
 * codeUnits into one buffer shared by all callers, valid until the next call: for synchronous walks
 * that do not keep the array (the chunker, the segmenter). Saves allocating, and garbage-collecting, two
 * bytes per character for every document.
 */
export function scratchCodeUnits(text: string): Uint16Array {
  const n = text.length;
  if (!LITTLE_ENDIAN || n > SCRATCH_MAX_CHARS) return codeUnits(text);
  if (scratch === null || scratch.length < n) {
    scratch = new Uint16Array(
      Math.min(SCRATCH_MAX_CHARS, Math.max(n, 1 << 16, scratch ? scratch.length * 2 : 0)),
    );
    scratchBytes = Buffer.from(scratch.buffer, scratch.byteOffset, scratch.byteLength);
  }
  (scratchBytes as Buffer).write(text, 0, 'utf16le');
  return scratch.subarray(0, n);
}
