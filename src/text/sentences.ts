import {
  CHAR_CLASS,
  CLASS_LETTER,
  CLASS_SPACE,
  charClassTable,
  codeUnits,
  isDigit,
  isLowerAt,
  isSpace,
  isUpperAt,
} from './chars.js';
import {
  SHARE4,
  SHARE4_RUN,
  TC_DIGIT,
  TC_LETTER,
  TC_SPACE,
  TC_TERMINATOR,
  TERMINATORS,
  TOKEN_CLASS,
  TOKEN_FRESH,
  TOKEN_SHARE,
  W_NEWLINE,
  W_OTHER,
  WEIGHT_CODE,
  weightThirds,
} from './tokenizer.js';

/*
 * The shared tables and codes as plain module constants for the walk: V8 reads an imported binding from
 * its cell at every use, but builds a plain `const` into the optimized code (and drops the bounds checks
 * of lookups into a table of known length): a tenth of the splitter's time.
 */
const tokenClass = TOKEN_CLASS;
const tokenShare = TOKEN_SHARE;
const charClass = CHAR_CLASS;
const RUN = SHARE4_RUN;
const FRESH = TOKEN_FRESH;
const LETTER = TC_LETTER;
const SPACE = TC_SPACE;
const DIGIT = TC_DIGIT;
const TERMINATOR = TC_TERMINATOR;
const NEWLINE = W_NEWLINE;
const OTHER = W_OTHER;

/** A span of text: `start` inclusive, `end` exclusive, both offsets into the text given. */
export interface TextSpan {
  start: number;
  end: number;
}

/**
 * Abbreviations that end in a period without ending the sentence (lower-cased, without the period).
 * Single letters ("z. B.", "d. h.", "S.", "i. d. R.") are handled by a rule of their own, so they are not
 * listed. Only words that rarely end a German sentence belong here.
 */
const ABBREVIATIONS = new Set([
  'usw',
  'bzw',
  'ca',
  'nr',
  'abs',
  'art',
  'vgl',
  'etc',
  'dr',
  'prof',
  'hr',
  'fr',
  'ggf',
  'evtl',
  'inkl',
  'zzgl',
  'sog',
  'bspw',
  'jh',
  'jhd',
  'jhdt',
  'mio',
  'mrd',
  'st',
  'str',
  'bzgl',
  'ff',
  'gem',
  'max',
  'mind',
  'ggü',
  'lt',
  'anm',
  'abb',
  'tab',
  'kap',
  'bd',
  'bde',
  'hrsg',
  'aufl',
  'tel',
  'geb',
  'gest',
  'ehem',
  'insb',
  'einschl',
  'zit',
  'vs',
  'allg',
  'abschn',
  'buchst',
  'ziff',
  'lit',
  'dipl',
  'ing',
  'mag',
  'med',
  'phil',
  'rer',
  'nat',
  'jur',
  'verf',
  'ausg',
  'anh',
  'bgbl',
  'gvbl',
  'nf',
  'zb',
  'dh',
  'ua',
  'uvm',
  'od',
  'sa',
  'urt',
  'az',
  'mwst',
  'ust',
  'zt',
  'tw',
  'uu',
  'idr',
  'iv',
  'vj',
  'zi',
  'pkt',
  'std',
  'min',
  'sek',
  'gr',
  'kl',
  'mrz',
  'okt',
  'dez',
  'nov',
  'sept',
  'aug',
  'jan',
  'feb',
  'apr',
  'jun',
  'jul',
  'hrn',
  'fa',
  'corp',
  'inc',
  'ltd',
  'co',
  'univ',
  'techn',
  'hsg',
  'ref',
  'vol',
  'no',
  'pp',
  'ed',
  'eds',
  'bsp',
]);

const MAX_ABBREVIATION = Math.max(...[...ABBREVIATIONS].map((a) => a.length));

/**
 * A hash of text[start, end) lower-cased the cheap way (ASCII and Latin-1 capitals), without making a
 * string: most words before a period are no abbreviation, and this rules them out without the slice and
 * toLowerCase the exact test needs.
 */
function wordHash(codes: ArrayLike<number>, start: number, end: number): number {
  let h = end - start;
  for (let i = start; i < end; i++) {
    let c = codes[i] as number;
    if ((c >= 65 && c <= 90) || (c >= 0xc0 && c <= 0xde && c !== 0xd7)) c += 32;
    h = (Math.imul(h, 31) + c) | 0;
  }
  return h;
}

/** Low 12 bits of the abbreviations' hashes, as a bit table: one array read rules most words out. */
const ABBREVIATION_HASH_BITS: Uint8Array = (() => {
  const bits = new Uint8Array(4096);
  for (const a of ABBREVIATIONS) {
    bits[
      wordHash(
        Array.from(a, (ch) => ch.charCodeAt(0)),
        0,
        a.length,
      ) & 4095
    ] = 1;
  }
  return bits;
})();

/**
 * Length, first and last letter of the abbreviations, as a table indexed by
 * (length << 10) | (first & 31) << 5 | (last & 31): the low five bits of a code unit are the same for
 * both cases of ASCII and Latin-1 letters, so one read rules out nearly every word.
 */
const ABBREVIATION_SHAPES: Uint8Array = (() => {
  const shapes = new Uint8Array((MAX_ABBREVIATION + 2) << 10); // lengths up to MAX_ABBREVIATION + 1
  for (const a of ABBREVIATIONS) {
    const first = a.charCodeAt(0) & 31;
    const last = a.charCodeAt(a.length - 1) & 31;
    shapes[(a.length << 10) | (first << 5) | last] = 1;
  }
  return shapes;
})();

/** 1 for a letter, 0 otherwise (CHAR_CLASS). */
const LETTER_BIT: Uint8Array = charClassTable({ other: 0, letter: 1, digit: 0, space: 0, newline: 0 });

/** Letter test by table (isLetter in chars.ts, one array read): for the loops over words. */
function letterCode(c: number): boolean {
  return charClass[c] === CLASS_LETTER;
}

/** Abbreviations that may also close a sentence: a capital letter after them starts a new one. */
const SENTENCE_FINAL_ABBREVIATIONS = new Set(['usw', 'etc', 'uvm']);

const MONTHS = new Set([
  'januar',
  'jänner',
  'februar',
  'märz',
  'april',
  'mai',
  'juni',
  'juli',
  'august',
  'september',
  'oktober',
  'november',
  'dezember',
]);

/** Nouns that follow an ordinal number ("3. Kapitel", "2. Lehrjahr"). */
const ORDINAL_NOUNS = new Set([
  'kapitel',
  'abschnitt',
  'absatz',
  'buch',
  'teil',
  'titel',
  'jahrhundert',
  'jahrtausend',
  'auflage',
  'lehrjahr',
  'ausbildungsjahr',
  'semester',
  'quartal',
  'halbjahr',
  'klasse',
  'stock',
  'etage',
  'mal',
  'woche',
  'tag',
  'monat',
  'jahr',
  'lebensjahr',
  'platz',
  'rang',
  'stufe',
  'runde',
  'schritt',
  'fassung',
  'änderung',
  'verordnung',
  'gesetz',
  'durchführungsverordnung',
  'sitzung',
  'lektion',
  'modul',
  'einheit',
]);

/** Words before a number that make it an ordinal ("am 1. Januar", "der 3. Abschnitt", "bis 5. Mai"). */
const ORDINAL_PRECEDERS = new Set([
  'am',
  'im',
  'vom',
  'zum',
  'zur',
  'bis',
  'ab',
  'seit',
  'der',
  'die',
  'das',
  'den',
  'dem',
  'des',
  'ein',
  'eine',
  'einer',
  'eines',
  'einem',
  'einen',
  'beim',
  'jeder',
  'jede',
  'jedes',
  'jeden',
  'jedem',
  'nach',
  'vor',
  'zum',
  'ihr',
  'ihre',
  'ihrem',
  'ihren',
  'sein',
  'seine',
  'seinem',
  'seinen',
  'dieser',
  'diese',
  'dieses',
  'diesem',
  'diesen',
  'spätestens',
  'frühestens',
  'bereits',
  'erst',
  'ihres',
  'seines',
]);

/** How many letters stand right before `end` (down to `floor`). */
function lettersBefore(codes: Uint16Array, end: number, floor: number): number {
  let s = end;
  while (s > floor && letterCode(codes[s - 1] as number)) s--;
  return end - s;
}

/** The four digits codes[s..last] read as a year of the 20th or 21st century. */
function isYear(codes: Uint16Array, s: number, last: number): boolean {
  if (last - s !== 3) return false;
  const century = ((codes[s] as number) - 48) * 10 + ((codes[s + 1] as number) - 48);
  return century === 19 || century === 20;
}

/** Lower-cased word of letters ending right before `end` (at most 24 letters), or ''. */
function wordBefore(text: string, codes: Uint16Array, end: number, floor: number): string {
  const letters = lettersBefore(codes, end, floor);
  if (letters === 0 || letters > 24) return '';
  return text.slice(end - letters, end).toLowerCase();
}

/** Lower-cased word of letters starting at `start` (at most 24 letters). */
function wordAt(text: string, codes: Uint16Array, start: number, limit: number): string {
  let e = start;
  while (e < limit && letterCode(codes[e] as number)) e++;
  if (e === start || e - start > 24) return '';
  return text.slice(start, e).toLowerCase();
}

/** True when only spaces or tabs stand between the previous line break (or `floor`) and `pos`. */
function atLineStart(codes: Uint16Array, pos: number, floor: number): boolean {
  let p = pos - 1;
  while (p >= floor) {
    const c = codes[p] as number;
    if (c === 10) return true;
    if (c !== 32 && c !== 9) return false;
    p--;
  }
  return true;
}

/** Lower-case letter at i (ASCII from the code units; other letters by case mapping of the text). */
function lowerAt(text: string, codes: Uint16Array, i: number): boolean {
  const c = codes[i] as number;
  if (c < 128) return c >= 97 && c <= 122;
  return isLowerAt(text, i);
}

/**
 * Decides whether the terminator run text[first..last] (followed by closers up to `after`, then white
 * space, then the next visible character at `next`) ends a sentence. `codes` are the code units of
 * `text`; the text itself is read only to lower-case candidate words.
 */
function endsSentence(
  text: string,
  codes: Uint16Array,
  floor: number,
  first: number,
  last: number,
  next: number,
  limit: number,
): boolean {
  const term = codes[first] as number;
  const nextIsLower = lowerAt(text, codes, next);
  if (term !== 46 || last !== first) {
    // "!", "?", "…", "..." and mixes: a lower-case continuation means the sentence goes on
    // ("„Wirklich?“ fragte sie", "und dann ... weiter")
    return !nextIsLower;
  }
  const before = first - 1;
  if (before < floor) return !nextIsLower;
  const b = codes[before] as number;
  if (letterCode(b)) {
    // German sentences do not start in lower case: "z. B. ein", "usw. und", "ca. zehn" go on
    if (nextIsLower) return false;
    // the letters before the period (up to one more than the longest abbreviation) as a bit mask, read
    // without a branch per letter: a loop to the word's start mispredicts its exit at every sentence end
    const window = Math.min(MAX_ABBREVIATION + 1, first - floor);
    let mask = 0;
    for (let j = 0; j < window; j++) mask |= (LETTER_BIT[codes[first - 1 - j] as number] as number) << j;
    const len = 31 - Math.clz32(~mask & (mask + 1)); // trailing ones: the word's length
    const ws = first - len;
    if (len <= 2) {
      if (len === 1) return false; // z. B., d. h., u. a., S. 5, i. d. R., Buchstabe a.
      // "z.B." / "i.d.R." written without spaces: a short word before the period before the word; a long one
      // makes it a domain ("www.example.de. Dort", "info@example.de. Wir")
      if (ws > floor && codes[ws - 1] === 46 && lettersBefore(codes, ws - 1, floor) <= 2) return false;
    }
    // a street ("Hauptstr. 5", "Bahnhofstr. 12"): a word ending in "str" before a house number
    if (
      len > 3 &&
      isDigit(codes[next] as number) &&
      ((codes[before - 2] as number) | 32) === 115 &&
      ((codes[before - 1] as number) | 32) === 116 &&
      ((codes[before] as number) | 32) === 114
    )
      return false;
    // no abbreviation has this length (the table has no entries beyond the longest one), first and
    // last letter (nearly every word), or this hash
    const shape = (len << 10) | (((codes[ws] as number) & 31) << 5) | ((codes[before] as number) & 31);
    if (ABBREVIATION_SHAPES[shape] === 0) return true;
    if (ABBREVIATION_HASH_BITS[wordHash(codes, ws, first) & 4095] === 0) return true;
    const word = text.slice(ws, first).toLowerCase();
    if (ABBREVIATIONS.has(word)) return SENTENCE_FINAL_ABBREVIATIONS.has(word) && isUpperAt(text, next);
    return true;
  }
  if (isDigit(b)) {
    let s = before;
    while (s > floor && isDigit(codes[s - 1] as number)) s--;
    if (nextIsLower || isDigit(codes[next] as number)) return false;
    // "01.02. beginnt", "1.2. Unterabschnitt": a dotted number is a date or an outline number; a date with its
    // year ("bis 31.12.2024. Danach") and a number with a thousands point ("beträgt 1.250. Danach") end a sentence
    // like any word
    if (s > floor && codes[s - 1] === 46 && before - s !== 3 && before - s !== 2) return false;
    // "1." at the start of a line is an enumeration label
    if (atLineStart(codes, s, floor)) return false;
    const nextWord = wordAt(text, codes, next, limit);
    if (MONTHS.has(nextWord) || ORDINAL_NOUNS.has(nextWord)) return false;
    // the word before the number: "am 1.", "der 3."
    let p = s;
    while (p > floor && isSpace(codes[p - 1] as number)) p--;
    // "ab 1. Januar", "der 3. Absatz": an ordinal; a year is none ("gilt ab 2025. Danach")
    if (!isYear(codes, s, before) && ORDINAL_PRECEDERS.has(wordBefore(text, codes, p, floor))) return false;
    return true;
  }
  return !nextIsLower;
}

/** A sentence: its span and its unrounded token weight (tokenizer.ts rules), found in the same pass. */
export interface SentenceSpan extends TextSpan {
  weight: number;
}

function isCloser(c: number): boolean {
  return (
    c === 34 ||
    c === 39 ||
    c === 41 ||
    c === 93 ||
    c === 125 ||
    c === 0x201c ||
    c === 0x201d ||
    c === 0x2019 ||
    c === 0x2018 ||
    c === 0xbb ||
    c === 0xab ||
    c === 0x203a ||
    c === 0x2039
  );
}

/**
 * Sentences found by scanSentences, as parallel typed arrays (no object per sentence). Weights are in
 * thirds of a token (tokenizer.ts); `gap` is the weight of the white space before the sentence.
 */
export class SentenceList {
  count = 0;
  start = new Int32Array(256);
  end = new Int32Array(256);
  weight = new Float64Array(256);
  gap = new Float64Array(256);

  clear(): void {
    this.count = 0;
  }

  push(start: number, end: number, weight: number, gap: number): void {
    if (this.count === this.start.length) this.grow();
    const k = this.count++;
    this.start[k] = start;
    this.end[k] = end;
    this.weight[k] = weight;
    this.gap[k] = gap;
  }

  private grow(): void {
    const size = this.start.length * 2;
    const start = new Int32Array(size);
    start.set(this.start);
    this.start = start;
    const end = new Int32Array(size);
    end.set(this.end);
    this.end = end;
    const weight = new Float64Array(size);
    weight.set(this.weight);
    this.weight = weight;
    const gap = new Float64Array(size);
    gap.set(this.gap);
    this.gap = gap;
  }
}

/** White space code unit (space, tab, line break, no-break and thin spaces). */
function spaceCode(codes: Uint16Array, i: number): boolean {
  return (charClass[codes[i] as number] as number) >= CLASS_SPACE;
}

/** SCAN_CODE bit of a terminator: above the register's bits, so a step of four tests it with one compare. */
const STOP = 1 << 24;

/**
 * Register codes for the splitter's walk (WEIGHT_CODE of tokenizer.ts), terminators (. ! ? …) with the
 * STOP bit as well: the walk stops at them. Shifted into place for a step of four (by 6, 4, 2 and 0
 * bits), the STOP bits land at bits 24-30, where the register (24 bits kept) has none.
 */
const SCAN_CODE: Int32Array = (() => {
  const table = Int32Array.from(WEIGHT_CODE);
  for (const c of TERMINATORS) table[c] = STOP | W_OTHER;
  return table;
})();

/**
 * SHARE4 for the splitter: a line break may be taken in a step of four only when a visible character
 * follows it in the same step (hard-wrapped text, nearly every line break inside a paragraph); one
 * followed by white space might open a blank line, and one at the end of the step has its follower
 * unseen, so those steps are marked SHARE4_RUN and the walk takes them one at a time.
 */
const SCAN_SHARE4: Uint8Array = (() => {
  const table = SHARE4.slice();
  // 1 for a pair of register codes (a character << 2 | the one after it) that is a line break before white space
  const breakBeforeWhite = new Uint8Array(16);
  for (const follower of [TC_SPACE, W_NEWLINE]) breakBeforeWhite[(W_NEWLINE << 2) | follower] = 1;
  for (let w = 0; w < 65536; w++) {
    const mark =
      (w & 3) === W_NEWLINE ||
      breakBeforeWhite[(w >> 4) & 15] === 1 ||
      breakBeforeWhite[(w >> 2) & 15] === 1 ||
      breakBeforeWhite[w & 15] === 1;
    if (mark) table[w] = (table[w] as number) | SHARE4_RUN;
  }
  return table;
})();

/**
 * The sentence splitter's walk over text[from, to) (`codes` are the code units of `text`): appends the
 * sentences to `out`. One pass: the tokenizer's walk (weightThirds in tokenizer.ts, four characters a
 * step) runs until the next character that can matter for a sentence end (. ! ? …, or a line break
 * followed by white space) or the decided end of the current sentence, so each sentence gets its token
 * weight from the same walk, and the rules in endsSentence run only at terminators.
 */
export function scanSentences(
  text: string,
  codes: Uint16Array,
  from: number,
  to: number,
  out: SentenceList,
): void {
  const code = SCAN_CODE;
  const share = tokenShare;
  const share4 = SCAN_SHARE4;
  // the tokenizer's walk (weightThirds): weight so far (thirds), class register, digit/symbol run position,
  // last digit or symbol taken one at a time
  let acc = 0;
  let w = FRESH;
  let runPos = 0;
  let lastOther = -2;
  let sStart = -1; // first character of the current sentence, -1 between sentences
  let sAcc = 0; // acc at sStart
  let endAcc = 0; // acc at the end of the previous sentence
  let pending = -1; // decided end of the current sentence (where white space begins)
  let i = from;
  while (i < to) {
    if (sStart < 0) {
      // between sentences: white space up to the next visible character
      for (; i < to; i++) {
        const k = code[codes[i] as number] as number;
        if (k !== SPACE && k !== NEWLINE) break;
        w = (w << 2) | k;
        acc += share[w & 1023] as number;
      }
      if (i >= to) break;
      sStart = i;
      sAcc = acc;
    }
    const stop = pending >= 0 ? pending : to;
    const stop4 = stop - 3;
    // the walk up to the sentence's decided end, or to the next line break or terminator
    for (;;) {
      while (i < stop4) {
        const next =
          ((w & 0xffff) << 8) |
          ((code[codes[i] as number] as number) << 6) |
          ((code[codes[i + 1] as number] as number) << 4) |
          ((code[codes[i + 2] as number] as number) << 2) |
          (code[codes[i + 3] as number] as number);
        if (next >= STOP) break; // a terminator
        const g = share4[next & 0xffff] as number;
        if (g >= RUN) break;
        w = next;
        acc += g;
        i += 4;
      }
      if (i >= stop) break;
      const c = codes[i] as number;
      const k = code[c] as number;
      if (k < NEWLINE) {
        w = (w << 2) | k;
        acc += share[w & 1023] as number;
      } else if (k === OTHER) {
        w = (w << 2) | OTHER;
        if (tokenClass[c] === DIGIT) {
          runPos =
            i > from && tokenClass[codes[i - 1] as number] === DIGIT
              ? lastOther === i - 1
                ? runPos === 2
                  ? 0
                  : runPos + 1
                : 1
              : 0;
        } else {
          runPos = i > from && codes[i - 1] === c ? (lastOther === i - 1 ? (runPos + 1) & 3 : 1) : 0;
        }
        lastOther = i;
        if (runPos === 0) acc += 3;
      } else if (k === NEWLINE) {
        // a line break followed by a visible character (hard-wrapped text) cannot open a blank line
        const nk = i + 1 < to ? (code[codes[i + 1] as number] as number) : LETTER;
        if (nk === SPACE || nk === NEWLINE) break;
        w = (w << 2) | NEWLINE;
        acc += share[w & 1023] as number;
      } else {
        break; // a terminator
      }
      i++;
    }
    if (i === pending) {
      out.push(sStart, i, acc - sAcc, sAcc - endAcc);
      endAcc = acc;
      sStart = -1;
      pending = -1;
      continue;
    }
    if (i >= to) break;
    const c = codes[i] as number;
    if (c === 10) {
      // a line break: a blank line (two or more breaks in one white-space run) ends the sentence; the
      // breaks of a run are met in order, so a break before this one in the run would have found it
      let j = i + 1;
      while (j < to && spaceCode(codes, j) && codes[j] !== 10) j++;
      if (j < to && codes[j] === 10) {
        let r = i;
        while (r > sStart && spaceCode(codes, r - 1)) r--;
        const rAcc = acc - weightThirds(codes, r, i); // white space from r on is a run of its own
        out.push(sStart, r, rAcc - sAcc, sAcc - endAcc);
        endAcc = rAcc;
        sStart = -1;
        continue;
      }
      w = (w << 2) | NEWLINE;
      acc += share[w & 1023] as number;
      i++;
      continue;
    }
    if (!(i > from && tokenClass[codes[i - 1] as number] === TERMINATOR)) {
      // a terminator sequence starts here: decide once, where the sequence begins
      let last = i;
      while (last + 1 < to && tokenClass[codes[last + 1] as number] === TERMINATOR) last++;
      let after = last + 1;
      while (after < to && isCloser(codes[after] as number)) after++;
      if (after < to && spaceCode(codes, after)) {
        let next = after;
        while (next < to && spaceCode(codes, next)) next++;
        if (next >= to || endsSentence(text, codes, from, i, last, next, to)) pending = after;
      }
      // a terminator run that reaches `to` ends the last sentence there anyway
    }
    // a terminator is a symbol for the weight (never taken in a step of four, so lastOther is exact)
    w = (w << 2) | OTHER;
    runPos = i > from && codes[i - 1] === c ? (lastOther === i - 1 ? (runPos + 1) & 3 : 1) : 0;
    lastOther = i;
    if (runPos === 0) acc += 3;
    i++;
  }
  if (sStart >= 0) {
    let r = to;
    while (r > sStart && spaceCode(codes, r - 1)) r--;
    const rAcc = acc - weightThirds(codes, r, to);
    out.push(sStart, r, rAcc - sAcc, sAcc - endAcc);
  }
}

/**
 * Splits text[start, end) into sentences, German-aware: abbreviations ("z. B.", "Nr.", "Abs.", "ggf."),
 * ordinals ("3. Kapitel", "am 1. Januar 2024"), dates and numbers ("01.02.2024", "1.000"), enumeration
 * labels at the start of a line ("1."), ellipses and quotes/brackets after the period. A blank line always
 * ends a sentence; a single line break does not (hard-wrapped text). Spans are trimmed of white space and
 * together cover every visible character of the range, in order. Each sentence comes with its token
 * weight (`weight`, unrounded; round the sum of a chunk's sentences once), found in the same pass.
 */
export function splitSentences(text: string, start = 0, end: number = text.length): SentenceSpan[] {
  const from = Math.max(0, start);
  const to = Math.min(end, text.length);
  if (from >= to) return [];
  // the walk looks at nothing outside [from, to), so the range's own code units suffice
  const sub = from === 0 && to === text.length ? text : text.slice(from, to);
  const list = new SentenceList();
  scanSentences(sub, codeUnits(sub), 0, sub.length, list);
  const out: SentenceSpan[] = new Array(list.count);
  for (let k = 0; k < list.count; k++) {
    out[k] = {
      start: (list.start[k] as number) + from,
      end: (list.end[k] as number) + from,
      weight: (list.weight[k] as number) / 3,
    };
  }
  return out;
}
