/**
 * The one token counter of cpe. Every step that stores or budgets tokens (chunk.token_count, embedding
 * batches, LLM prompts) counts through this module, so figures agree across the pipeline.
 *
 * Why an estimate and not a BPE: a real BPE (cl100k, o200k, a Llama vocabulary) costs a dictionary load
 * and tens of microseconds per chunk, and it is the wrong vocabulary for half the models cpe talks to
 * anyway (mxbai-embed-large is WordPiece, Claude has its own). Chunking needs a count that is cheap, stable
 * and close enough; the exact figure, where it matters (billing), comes back from the provider.
 *
 * How it estimates, in one pass over the UTF-16 code units, without regexes or substrings:
 * - a run of letters (a word) is 1 token up to 4 letters; every further 3 letters add a token (fractional,
 *   rounded once at the end), because BPE vocabularies hold short German words whole but split longer
 *   words and compounds into pieces of about three letters ("Berufsausbildungsverhältnis" is 7-8 pieces);
 * - a run of digits is 1 token per 3 digits (cl100k and o200k group digits in threes);
 * - each punctuation/symbol character is a token, but a run of the same character ("----", "....")
 *   counts one per 4, as vocabularies hold such runs;
 * - one space is free (BPE glues it onto the next word); a line break run or an indentation run costs one.
 * Calibration, measured with cl100k_base (js-tiktoken) on the German corpus (federal laws and handbook
 * chapters, 2000-character windows): cl100k gives 3.3 characters per token on the laws and 3.5-3.7 on
 * handbook prose; this estimate gives 3.3 overall, median ratio estimate/cl100k 0.98, 90% of windows
 * within 0.92-1.11. Newer vocabularies (o200k, Llama 3) need fewer tokens for German, so the estimate
 * errs on the generous side, which is the safe side for context budgets. `estimateTokensByChars` (chars/4,
 * the original system's rule) stays as the fallback for callers that want the old figure.
 */
import { charClassTable } from './chars.js';

export const tokenizerName = 'cpe-estimate-v1';

/** The original system's rule of thumb: one token per four characters. */
export function estimateTokensByChars(text: string): number {
  return Math.ceil(text.length / 4);
}

/*
 * Implementation: weights are counted in thirds of a token, as integers, so sums of pieces are exact and
 * rounding happens once. Each character adds its share of its run's weight as the walk reaches it (the
 * share depends only on the run's kind and the character's position in the run), so the weight of any
 * prefix of a run is the weight of that shorter run, and a range that starts where a run starts weighs
 * exactly what its text weighs on its own. Per kind, in thirds, by position p in the run (0-based):
 * - letters: 3 at p = 0, 1 from p = 4 on (a run of n letters: max(3, n - 1), i.e. 1 + (n - 4) / 3 tokens)
 * - digits: 3 at every third position (ceil(n / 3) tokens)
 * - one symbol repeated: 3 at every fourth position (1 + floor((n - 1) / 4) tokens)
 * - white space starting with a space: 3 at p = 1 (a lone space is free, a longer run is a token)
 * - white space starting with a line break: 3 at p = 0
 *
 * Letters, spaces and line breaks (over 90% of German text) need to know only the classes of the last
 * four characters before them, so the walk keeps those in a shift register (two bits per character) and
 * reads the share from a table: no branch per word end, and no table read on the critical path (which a
 * state machine would have). The first digit or symbol of a run is a token whatever came before, so it
 * fits the register too (code 3): four characters are taken in one step with one read of a 65536-entry
 * table (SHARE4), and only a digit or symbol right after another one (2% of German text: "(1)", "2024",
 * "--") takes a branch of its own that counts its run position. A branch per digit or symbol cost more
 * than the rest of the walk: they are every fifteenth character, and each one was a mispredicted jump.
 */

/**
 * Character classes (TOKEN_CLASS). Letters and spaces are the fast classes (bit 2 clear), so four
 * characters can be tested at once with one OR; everything else takes the slow branch.
 */
export const TC_LETTER = 0;
export const TC_SPACE = 1;
export const TC_DIGIT = 4;
export const TC_SYMBOL = 5;
/** . ! ? … : a symbol for the weight, and where the sentence splitter must look */
export const TC_TERMINATOR = 6;
export const TC_NEWLINE = 7;
/** Bit set on every class that is not a letter or a space. */
export const TC_SLOW = 4;

/** . ! ? …: where a sentence may end. */
export const TERMINATORS = [46, 33, 63, 0x2026];

/** Class of every UTF-16 code unit: CHAR_CLASS's, anything else a symbol, . ! ? … terminators. */
export const TOKEN_CLASS: Uint8Array = (() => {
  const table = charClassTable({
    other: TC_SYMBOL,
    letter: TC_LETTER,
    digit: TC_DIGIT,
    space: TC_SPACE,
    newline: TC_NEWLINE,
  });
  for (const c of TERMINATORS) table[c] = TC_TERMINATOR;
  return table;
})();

/** Shift-register codes: letter 0 and space 1 (their classes), line break 2, anything else 3. */
export const W_NEWLINE = 2;
export const W_OTHER = 3;

/**
 * Register code (0-3) of every code unit for the weight walk: letters, spaces and line breaks as above,
 * digits and symbols (terminators included) W_OTHER.
 */
export const WEIGHT_CODE: Uint8Array = charClassTable({
  other: W_OTHER,
  letter: TC_LETTER,
  digit: W_OTHER,
  space: TC_SPACE,
  newline: W_NEWLINE,
});

/**
 * Share (thirds) of a letter, space or line break, by the register after shifting it in: bits 0-1 the
 * character itself, bits 2-3 the one before, and so on (four characters back).
 */
export const TOKEN_SHARE: Int32Array = (() => {
  const share = new Int32Array(1024);
  const white = (x: number) => x === TC_SPACE || x === W_NEWLINE;
  for (let w = 0; w < 1024; w++) {
    const cur = w & 3;
    const p1 = (w >> 2) & 3;
    const p2 = (w >> 4) & 3;
    let g = 0;
    if (cur === TC_LETTER) {
      // first letter of a word: a token; from the fifth letter on (four letters before): a third more
      g = p1 !== TC_LETTER ? 3 : w >> 2 === 0 ? 1 : 0;
    } else if (white(cur)) {
      // a line break opening white space is a token; so is the second character after an opening space
      if (!white(p1)) g = cur === W_NEWLINE ? 3 : 0;
      else if (p1 === TC_SPACE && !white(p2)) g = 3;
    }
    share[w] = g;
  }
  return share;
})();

/** SHARE4 flag: a digit or symbol follows another one, its share needs the run position (SHARE4). */
export const SHARE4_RUN = 128;

/**
 * Share (thirds) of the last four characters of the register (its low 16 bits: those four and the four
 * before them), for a walk that takes four characters in one step. A digit or symbol after a letter,
 * space or line break opens its run and is a token; one after another digit or symbol needs the run
 * position (digits count per three, a repeated symbol per four), which the register does not hold, so
 * such a step is marked SHARE4_RUN and the walk takes those characters one at a time.
 */
export const SHARE4: Uint8Array = (() => {
  // what one character adds, by its register window: its share, or SHARE4_RUN for a digit or symbol after another
  const part = new Uint8Array(1024);
  for (let window = 0; window < 1024; window++) {
    if ((window & 3) !== W_OTHER) part[window] = TOKEN_SHARE[window] as number;
    else part[window] = ((window >> 2) & 3) !== W_OTHER ? 3 : SHARE4_RUN;
  }
  const table = new Uint8Array(65536);
  for (let w = 0; w < 65536; w++) {
    // four shares of at most 3 each stay below SHARE4_RUN; each run adds a multiple of it
    const sum =
      (part[(w >> 6) & 1023] as number) +
      (part[(w >> 4) & 1023] as number) +
      (part[(w >> 2) & 1023] as number) +
      (part[w & 1023] as number);
    table[w] = sum < SHARE4_RUN ? sum : (sum % SHARE4_RUN) | SHARE4_RUN;
  }
  return table;
})();

/** Register value of a fresh walk: as if "anything else" came before. */
export const TOKEN_FRESH = -1;

/*
 * The tables and codes again, as plain module constants for the walks below: V8 reads an exported
 * binding from its cell at every use, but builds a plain `const` into the optimized code, and with the
 * table's length known it drops the bounds check of every lookup (a sixth of the walk's time).
 */
const tokenClass = TOKEN_CLASS;
const weightCode = WEIGHT_CODE;
const tokenShare = TOKEN_SHARE;
const share4 = SHARE4;
const RUN = SHARE4_RUN;
const FRESH = TOKEN_FRESH;
const DIGIT = TC_DIGIT;
const OTHER = W_OTHER;

/**
 * Weight of codes[start, end) in thirds of a token, the walk starting a fresh run at `start`. `codes` are
 * the UTF-16 code units of the text (see codeUnits in chars.ts): typed-array reads keep the loop tight.
 * Four characters are taken in one step (SHARE4) unless a digit or symbol follows another one; those go
 * one at a time, counting their position in the run. A run's first digit or symbol was taken in a step
 * of four or one at a time; `lastOther` tells which, so a run's position is always known (a character
 * after a run's first one, taken in a step of four, is at position 1).
 */
export function weightThirds(codes: Uint16Array, start: number, end: number): number {
  const code = weightCode;
  let acc = 0;
  let w = FRESH;
  let runPos = 0; // position in the current digit or symbol run
  let lastOther = -2; // last digit or symbol taken one at a time
  let i = start;
  const end4 = end - 3;
  while (i < end) {
    while (i < end4) {
      const next =
        (w << 8) |
        ((code[codes[i] as number] as number) << 6) |
        ((code[codes[i + 1] as number] as number) << 4) |
        ((code[codes[i + 2] as number] as number) << 2) |
        (code[codes[i + 3] as number] as number);
      const g = share4[next & 0xffff] as number;
      if (g >= RUN) break;
      w = next;
      acc += g;
      i += 4;
    }
    if (i >= end) break;
    const c = codes[i] as number;
    const k = code[c] as number;
    w = (w << 2) | k;
    if (k !== OTHER) acc += tokenShare[w & 1023] as number;
    else {
      if (tokenClass[c] === DIGIT) {
        runPos =
          i > start && tokenClass[codes[i - 1] as number] === DIGIT
            ? lastOther === i - 1
              ? runPos === 2
                ? 0
                : runPos + 1
              : 1
            : 0;
      } else {
        runPos = i > start && codes[i - 1] === c ? (lastOther === i - 1 ? (runPos + 1) & 3 : 1) : 0;
      }
      lastOther = i;
      if (runPos === 0) acc += 3;
    }
    i++;
  }
  return acc;
}

/** weightThirds on a string (for callers without code units; the same walk, a character at a time). */
export function weightThirdsOf(text: string, start: number, end: number): number {
  const code = weightCode;
  const share = tokenShare;
  const from = Math.max(0, start);
  const n = Math.min(end, text.length);
  let acc = 0;
  let w = FRESH;
  let runPos = 0;
  for (let i = from; i < n; i++) {
    const c = text.charCodeAt(i);
    const k = code[c] as number;
    w = (w << 2) | k;
    if (k !== OTHER) acc += share[w & 1023] as number;
    else {
      if (tokenClass[c] === DIGIT) {
        runPos =
          i > from && tokenClass[text.charCodeAt(i - 1)] === DIGIT ? (runPos === 2 ? 0 : runPos + 1) : 0;
      } else {
        runPos = i > from && text.charCodeAt(i - 1) === c ? (runPos + 1) & 3 : 0;
      }
      if (runPos === 0) acc += 3;
    }
  }
  return acc;
}

/** Tokens of a weight in thirds (a third is never exactly half a token, so rounding is unambiguous). */
export function thirdsToTokens(thirds: number): number {
  return Math.round(thirds / 3);
}

/** Estimated token count of `text` (an integer >= 0; 0 only for text without visible characters). */
export function countTokens(text: string): number {
  return thirdsToTokens(weightThirdsOf(text, 0, text.length));
}

/** Token count of `text.slice(start, end)` without making the slice (for hot loops over offsets). */
export function countTokensInRange(text: string, start: number, end: number): number {
  return thirdsToTokens(weightThirdsOf(text, start, end));
}

/**
 * The unrounded estimate of `text.slice(start, end)`. Pieces of a text split at white space add up to the
 * weight of the whole (no character run crosses white space), so callers can sum pieces and round once.
 */
export function tokenWeight(text: string, start: number, end: number): number {
  return weightThirdsOf(text, start, end) / 3;
}
