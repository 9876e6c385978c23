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

const SHORT_WORD = 4;
const LETTERS_PER_EXTRA_TOKEN = 3;

/*
 * The weights of the four kinds of character runs. The sentence splitter (sentences.ts) walks the same
 * runs and uses these functions, so it can hand every sentence its token weight without a second pass.
 */

/** A run of `len` letters: short words are one token, longer ones a token per further three letters. */
export function letterRunWeight(len: number): number {
  return len <= SHORT_WORD ? 1 : 1 + (len - SHORT_WORD) / LETTERS_PER_EXTRA_TOKEN;
}

/** A run of `len` digits: groups of three. */
export function digitRunWeight(len: number): number {
  return Math.ceil(len / 3);
}

/** A run of one punctuation/symbol character repeated `len` times. */
export function symbolRunWeight(len: number): number {
  return 1 + Math.floor((len - 1) / 4);
}

/** A run of white space: one space rides on the next word; a line break or an indentation run is a token. */
export function spaceRunWeight(len: number, newline: boolean): number {
  return newline || len > 1 ? 1 : 0;
}

/** Estimated token count of `text` (an integer >= 0; 0 only for text without visible characters). */
export function countTokens(text: string): number {
  return countTokensInRange(text, 0, text.length);
}

/** Token count of `text.slice(start, end)` without making the slice (for hot loops over offsets). */
export function countTokensInRange(text: string, start: number, end: number): number {
  return Math.round(tokenWeight(text, start, end));
}

/**
 * The unrounded estimate of `text.slice(start, end)`. Pieces of a text split at white space add up to the
 * weight of the whole (no character run crosses white space), so callers can sum pieces and round once.
 */
export function tokenWeight(text: string, start: number, end: number): number {
  const n = Math.min(end, text.length);
  const table = CHAR_CLASS;
  let tokens = 0;
  let i = Math.max(0, start);
  while (i < n) {
    const c = text.charCodeAt(i);
    const cls = table[c] as number;
    if (cls === CLASS_LETTER) {
      const from = i;
      i++;
      while (i < n && table[text.charCodeAt(i)] === CLASS_LETTER) i++;
      tokens += letterRunWeight(i - from);
    } else if (cls === CLASS_DIGIT) {
      const from = i;
      i++;
      while (i < n && table[text.charCodeAt(i)] === CLASS_DIGIT) i++;
      tokens += digitRunWeight(i - from);
    } else if (cls === CLASS_SPACE || cls === CLASS_NEWLINE) {
      const from = i;
      let newline = cls === CLASS_NEWLINE;
      i++;
      for (; i < n; i++) {
        const d = table[text.charCodeAt(i)];
        if (d === CLASS_NEWLINE) newline = true;
        else if (d !== CLASS_SPACE) break;
      }
      tokens += spaceRunWeight(i - from, newline);
    } else {
      const from = i;
      i++;
      while (i < n && text.charCodeAt(i) === c) i++;
      tokens += symbolRunWeight(i - from);
    }
  }
  return tokens;
}
