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
 * share depends only on the run's kind and the character's position in the run), so the loop has no
 * inner run loops and no look-ahead, and the weight of any prefix of a run is the weight of that shorter
 * run: a range that starts where a run starts weighs exactly what its text weighs on its own. Per kind,
 * in thirds, by position p in the run (0-based):
 * - letters: 3 at p = 0, 1 from p = 4 on (a run of n letters: max(3, n - 1), i.e. 1 + (n - 4) / 3 tokens)
 * - digits: 3 at every third position (ceil(n / 3) tokens)
 * - one symbol repeated: 3 at every fourth position (1 + floor((n - 1) / 4) tokens)
 * - white space starting with a space: 3 at p = 1 (a lone space is free, a longer run is a token)
 * - white space starting with a line break: 3 at p = 0
 * Positions wrap from 16 back to 4, which keeps all of these patterns (their periods divide 12).
 */
const KIND_SYMBOL = 0;
const KIND_LETTER = 1;
const KIND_DIGIT = 2;
const KIND_SPACE = 3;
const KIND_NEWLINE = 4;
const POSITIONS = 16;

/**
 * Per code unit: `run key << 4 | flags << 3 | kind`. The run key tells runs apart (all letters share one,
 * all digits one, all white space one, every symbol its own: only a repeated symbol is one run). Bit 3
 * marks the characters the sentence splitter must look at (. ! ? … and the line break).
 */
export const TOKEN_INFO: Int32Array = (() => {
  const info = new Int32Array(65536);
  for (let c = 0; c < 65536; c++) {
    const cls = CHAR_CLASS[c] as number;
    let kind = KIND_SYMBOL;
    let key = c + 8;
    if (cls === CLASS_LETTER) [kind, key] = [KIND_LETTER, 1];
    else if (cls === CLASS_DIGIT) [kind, key] = [KIND_DIGIT, 2];
    else if (cls === CLASS_SPACE) [kind, key] = [KIND_SPACE, 3];
    else if (cls === CLASS_NEWLINE) [kind, key] = [KIND_NEWLINE, 3];
    const event = c === 46 || c === 33 || c === 63 || c === 0x2026 || c === 10 ? 8 : 0;
    info[c] = (key << 4) | event | kind;
  }
  return info;
})();

/** Bit of TOKEN_INFO set on . ! ? … and the line break. */
export const TOKEN_EVENT = 8;

/** Thirds of a token added by the character at position p of a run of each kind: GAIN[kind * 16 + p]. */
export const TOKEN_GAIN: Int32Array = (() => {
  const gain = new Int32Array(5 * POSITIONS);
  for (let p = 0; p < POSITIONS; p++) {
    gain[KIND_SYMBOL * POSITIONS + p] = p % 4 === 0 ? 3 : 0;
    gain[KIND_LETTER * POSITIONS + p] = p === 0 ? 3 : p >= 4 ? 1 : 0;
    gain[KIND_DIGIT * POSITIONS + p] = p % 3 === 0 ? 3 : 0;
    gain[KIND_SPACE * POSITIONS + p] = p === 1 ? 3 : 0;
    gain[KIND_NEWLINE * POSITIONS + p] = p === 0 ? 3 : 0;
  }
  return gain;
})();

/**
 * Weight of codes[start, end) in thirds of a token, the walk starting a fresh run at `start`. `codes` are
 * the UTF-16 code units of the text (see codeUnits in chars.ts): typed-array reads keep the loop tight.
 */
export function weightThirds(codes: Uint16Array, start: number, end: number): number {
  const info = TOKEN_INFO;
  const gain = TOKEN_GAIN;
  let acc = 0;
  let prevKey = -1;
  let pos = 0;
  let kind = 0;
  for (let i = start; i < end; i++) {
    const x = info[codes[i] as number] as number;
    const key = x >> 4;
    if (key === prevKey) {
      pos++;
      if (pos === POSITIONS) pos = 4;
    } else {
      pos = 0;
      kind = x & 7;
      prevKey = key;
    }
    acc += gain[(kind << 4) | pos] as number;
  }
  return acc;
}

/** weightThirds on a string (for callers without code units; the same walk). */
export function weightThirdsOf(text: string, start: number, end: number): number {
  const info = TOKEN_INFO;
  const gain = TOKEN_GAIN;
  const n = Math.min(end, text.length);
  let acc = 0;
  let prevKey = -1;
  let pos = 0;
  let kind = 0;
  for (let i = Math.max(0, start); i < n; i++) {
    const x = info[text.charCodeAt(i)] as number;
    const key = x >> 4;
    if (key === prevKey) {
      pos++;
      if (pos === POSITIONS) pos = 4;
    } else {
      pos = 0;
      kind = x & 7;
      prevKey = key;
    }
    acc += gain[(kind << 4) | pos] as number;
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
