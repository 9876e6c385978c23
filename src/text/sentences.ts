import {
  CHAR_CLASS,
  CLASS_DIGIT,
  CLASS_LETTER,
  CLASS_NEWLINE,
  CLASS_SPACE,
  isDigit,
  isLetter,
  isLowerAt,
  isSpace,
  isUpperAt,
} from './chars.js';
import { digitRunWeight, letterRunWeight, spaceRunWeight, symbolRunWeight } from './tokenizer.js';

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

function isTerminator(c: number): boolean {
  return c === 46 || c === 33 || c === 63 || c === 0x2026; // . ! ? …
}

/** Lower-cased word of letters ending right before `end` (at most 24 letters), and where it starts. */
function wordBefore(text: string, end: number, floor: number): { word: string; start: number } {
  let s = end;
  while (s > floor && isLetter(text.charCodeAt(s - 1))) s--;
  if (s === end || end - s > 24) return { word: '', start: s };
  return { word: text.slice(s, end).toLowerCase(), start: s };
}

/** Lower-cased word of letters starting at `start` (at most 24 letters). */
function wordAt(text: string, start: number, limit: number): string {
  let e = start;
  while (e < limit && isLetter(text.charCodeAt(e))) e++;
  if (e === start || e - start > 24) return '';
  return text.slice(start, e).toLowerCase();
}

/** True when only spaces or tabs stand between the previous line break (or `floor`) and `pos`. */
function atLineStart(text: string, pos: number, floor: number): boolean {
  let p = pos - 1;
  while (p >= floor) {
    const c = text.charCodeAt(p);
    if (c === 10) return true;
    if (c !== 32 && c !== 9) return false;
    p--;
  }
  return true;
}

/**
 * Decides whether the terminator run text[first..last] (followed by closers up to `after`, then white
 * space, then the next visible character at `next`) ends a sentence.
 */
function endsSentence(
  text: string,
  floor: number,
  first: number,
  last: number,
  next: number,
  limit: number,
): boolean {
  const term = text.charCodeAt(first);
  const nextIsLower = isLowerAt(text, next);
  const nextIsDigit = isDigit(text.charCodeAt(next));
  if (term !== 46 || last !== first) {
    // "!", "?", "…", "..." and mixes: a lower-case continuation means the sentence goes on
    // ("„Wirklich?“ fragte sie", "und dann ... weiter")
    return !nextIsLower;
  }
  const before = first - 1;
  if (before < floor) return !nextIsLower;
  const b = text.charCodeAt(before);
  if (isLetter(b)) {
    // German sentences do not start in lower case: "z. B. ein", "usw. und", "ca. zehn" go on
    if (nextIsLower) return false;
    let ws = first;
    while (ws > floor && isLetter(text.charCodeAt(ws - 1))) ws--;
    const len = first - ws;
    if (len === 1) return false; // z. B., d. h., u. a., S. 5, i. d. R., Buchstabe a.
    // "z.B." / "i.d.R." written without spaces: the letter before the word is a period
    if (len <= 2 && ws > floor && text.charCodeAt(ws - 1) === 46) return false;
    if (len > MAX_ABBREVIATION) return true;
    const word = text.slice(ws, first).toLowerCase();
    if (ABBREVIATIONS.has(word)) return SENTENCE_FINAL_ABBREVIATIONS.has(word) && isUpperAt(text, next);
    return true;
  }
  if (isDigit(b)) {
    let s = before;
    while (s > floor && isDigit(text.charCodeAt(s - 1))) s--;
    if (nextIsLower || nextIsDigit) return false;
    // "01.02. beginnt", "1.2. Unterabschnitt": a dotted number is a date or an outline number
    if (s > floor && text.charCodeAt(s - 1) === 46) return false;
    // "1." at the start of a line is an enumeration label
    if (atLineStart(text, s, floor)) return false;
    const nextWord = wordAt(text, next, limit);
    if (MONTHS.has(nextWord) || ORDINAL_NOUNS.has(nextWord)) return false;
    // the word before the number: "am 1.", "der 3."
    let p = s;
    while (p > floor && isSpace(text.charCodeAt(p - 1))) p--;
    const prev = wordBefore(text, p, floor).word;
    if (ORDINAL_PRECEDERS.has(prev)) return false;
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
 * Splits text[start, end) into sentences, German-aware: abbreviations ("z. B.", "Nr.", "Abs.", "ggf."),
 * ordinals ("3. Kapitel", "am 1. Januar 2024"), dates and numbers ("01.02.2024", "1.000"), enumeration
 * labels at the start of a line ("1."), ellipses and quotes/brackets after the period. A blank line always
 * ends a sentence; a single line break does not (hard-wrapped text). Spans are trimmed of white space and
 * together cover every visible character of the range, in order.
 *
 * One pass over the characters, run by run (letters, digits, white space, symbols) exactly as the
 * tokenizer walks them, so each sentence comes with its token weight (`weight`, unrounded; round the sum
 * of a chunk's sentences once) and the chunker needs no second pass. Abbreviation look-ups happen only at
 * a period followed by white space and an upper-case letter.
 */
export function splitSentences(text: string, start = 0, end: number = text.length): SentenceSpan[] {
  const out: SentenceSpan[] = [];
  const n = Math.min(end, text.length);
  const from = Math.max(0, start);
  const table = CHAR_CLASS;
  let sStart = -1; // first visible character of the current sentence
  let sEnd = 0; // after its last visible character
  let weight = 0; // weight from sStart to the current position
  let visibleWeight = 0; // weight from sStart to sEnd
  let pending = -1; // a decided sentence end that the walk has not reached yet
  let i = from;
  while (i < n) {
    const c = text.charCodeAt(i);
    const cls = table[c] as number;
    const runStart = i;
    if (cls === CLASS_SPACE || cls === CLASS_NEWLINE) {
      // a decided sentence end always lies where white space begins
      if (i === pending) {
        out.push({ start: sStart, end: i, weight });
        sStart = -1;
        weight = 0;
        pending = -1;
      }
      let newlines = cls === CLASS_NEWLINE ? 1 : 0;
      i++;
      for (; i < n; i++) {
        const d = table[text.charCodeAt(i)];
        if (d === CLASS_NEWLINE) newlines++;
        else if (d !== CLASS_SPACE) break;
      }
      if (sStart < 0) continue;
      if (newlines >= 2) {
        // blank line: paragraph break
        out.push({ start: sStart, end: sEnd, weight: visibleWeight });
        sStart = -1;
        weight = 0;
        pending = -1;
        continue;
      }
      weight += spaceRunWeight(i - runStart, newlines > 0);
      continue;
    }
    if (sStart < 0) sStart = runStart;
    if (cls === CLASS_LETTER) {
      i++;
      while (i < n && table[text.charCodeAt(i)] === CLASS_LETTER) i++;
      weight += letterRunWeight(i - runStart);
    } else if (cls === CLASS_DIGIT) {
      i++;
      while (i < n && table[text.charCodeAt(i)] === CLASS_DIGIT) i++;
      weight += digitRunWeight(i - runStart);
    } else {
      i++;
      while (i < n && text.charCodeAt(i) === c) i++;
      weight += symbolRunWeight(i - runStart);
      // a terminator sequence starts here: decide once, where the sequence begins
      if (
        isTerminator(c) &&
        pending < 0 &&
        !(runStart > from && isTerminator(text.charCodeAt(runStart - 1)))
      ) {
        let last = runStart;
        while (last + 1 < n && isTerminator(text.charCodeAt(last + 1))) last++;
        let after = last + 1;
        while (after < n && isCloser(text.charCodeAt(after))) after++;
        if (after >= n || isSpace(text.charCodeAt(after))) {
          let next = after;
          while (next < n && isSpace(text.charCodeAt(next))) next++;
          if (next >= n || endsSentence(text, from, runStart, last, next, n)) pending = after;
        }
      }
    }
    sEnd = i;
    visibleWeight = weight;
  }
  if (sStart >= 0) out.push({ start: sStart, end: sEnd, weight: visibleWeight });
  return out;
}
