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
import { CHAR_CLASS, CLASS_DIGIT, CLASS_LETTER, CLASS_NEWLINE, CLASS_SPACE } from './chars.js';

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
 * Positions wrap from 16 back to 4, which keeps all of these patterns (their periods divide 12).
 *
 * The walk is a small automaton: state = (kind, position), and one table read per character gives the
 * share and the next state. No inner run loops, so no mispredicted branch at every word end: about twice
 * as fast as walking run by run. The one thing the table cannot see is whether a symbol repeats the
 * previous one ("--" is one run, "-." two); that test runs only on symbols.
 */

/** Character classes of the automaton (TOKEN_CLASS): symbols, letters, digits, white space, line break, terminator. */
export const TC_SYMBOL = 0;
export const TC_LETTER = 1;
export const TC_DIGIT = 2;
export const TC_SPACE = 3;
export const TC_NEWLINE = 4;
/** . ! ? … : a symbol for the weight, an event for the sentence splitter (classes >= TC_NEWLINE are events) */
export const TC_TERMINATOR = 5;

/** Class of every UTF-16 code unit for the automaton. */
export const TOKEN_CLASS: Uint8Array = (() => {
  const table = new Uint8Array(65536);
  for (let c = 0; c < 65536; c++) {
    const cls = CHAR_CLASS[c] as number;
    if (cls === CLASS_LETTER) table[c] = TC_LETTER;
    else if (cls === CLASS_DIGIT) table[c] = TC_DIGIT;
    else if (cls === CLASS_SPACE) table[c] = TC_SPACE;
    else if (cls === CLASS_NEWLINE) table[c] = TC_NEWLINE;
    else if (c === 46 || c === 33 || c === 63 || c === 0x2026) table[c] = TC_TERMINATOR;
    else table[c] = TC_SYMBOL;
  }
  return table;
})();

const POSITIONS = 16;
/** Run kinds of the states: a symbol run, letters, digits, white space begun by a space or by a line break. */
const KINDS = 5;
/** The state before the first character (no run yet); states are kind * 16 + position. */
const START_STATE = KINDS * POSITIONS;

/** Share (thirds) of the character at position p of a run of each kind. */
function share(kind: number, p: number): number {
  if (kind === 0) return p % 4 === 0 ? 3 : 0;
  if (kind === 1) return p === 0 ? 3 : p >= 4 ? 1 : 0;
  if (kind === 2) return p % 3 === 0 ? 3 : 0;
  if (kind === 3) return p === 1 ? 3 : 0;
  return p === 0 ? 3 : 0;
}

/**
 * Transitions: TOKEN_STEP[state << 3 | class] = share << 10 | nextState << 3. A symbol always starts a new
 * run here; its continuation (the same symbol again) is TOKEN_REPEAT[state]. Exported for the sentence
 * splitter, which runs the same automaton.
 */
export const TOKEN_STEP: Int32Array = (() => {
  const step = new Int32Array((START_STATE + 1) * 8);
  for (let state = 0; state <= START_STATE; state++) {
    const kind = state === START_STATE ? -1 : state >> 4;
    const p = state & 15;
    for (let cls = 0; cls < 8; cls++) {
      const ck = cls === TC_TERMINATOR || cls > TC_TERMINATOR ? TC_SYMBOL : cls; // kind a class starts
      const same = (kind === ck && ck !== TC_SYMBOL) || (kind >= 3 && (ck === TC_SPACE || ck === TC_NEWLINE));
      let next: number;
      if (same) {
        const q = p + 1 === POSITIONS ? 4 : p + 1;
        next = kind * POSITIONS + q;
      } else next = ck * POSITIONS;
      step[(state << 3) | cls] = (share(next >> 4, next & 15) << 10) | (next << 3);
    }
  }
  return step;
})();

/** TOKEN_REPEAT[state] for a symbol state: the step when the same symbol comes again. */
export const TOKEN_REPEAT: Int32Array = (() => {
  const repeat = new Int32Array(START_STATE + 1);
  for (let p = 0; p < POSITIONS; p++) {
    const q = p + 1 === POSITIONS ? 4 : p + 1;
    repeat[p] = (share(0, q) << 10) | (q << 3);
  }
  return repeat;
})();

/** Automaton state (shifted left by 3, as the step table wants it) before the first character. */
export const TOKEN_START = START_STATE << 3;

/**
 * Weight of codes[start, end) in thirds of a token, the walk starting a fresh run at `start`. `codes` are
 * the UTF-16 code units of the text (see codeUnits in chars.ts): typed-array reads keep the loop tight.
 */
export function weightThirds(codes: Uint16Array, start: number, end: number): number {
  const cls = TOKEN_CLASS;
  const step = TOKEN_STEP;
  let acc = 0;
  let state = TOKEN_START;
  let prev = -1;
  for (let i = start; i < end; i++) {
    const c = codes[i] as number;
    const k = cls[c] as number;
    const e =
      c === prev && (k === TC_SYMBOL || k === TC_TERMINATOR)
        ? (TOKEN_REPEAT[state >> 3] as number)
        : (step[state | k] as number);
    acc += e >> 10;
    state = e & 1023;
    prev = c;
  }
  return acc;
}

/** weightThirds on a string (for callers without code units; the same walk). */
export function weightThirdsOf(text: string, start: number, end: number): number {
  const cls = TOKEN_CLASS;
  const step = TOKEN_STEP;
  const n = Math.min(end, text.length);
  let acc = 0;
  let state = TOKEN_START;
  let prev = -1;
  for (let i = Math.max(0, start); i < n; i++) {
    const c = text.charCodeAt(i);
    const k = cls[c] as number;
    const e =
      c === prev && (k === TC_SYMBOL || k === TC_TERMINATOR)
        ? (TOKEN_REPEAT[state >> 3] as number)
        : (step[state | k] as number);
    acc += e >> 10;
    state = e & 1023;
    prev = c;
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
