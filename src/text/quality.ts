import type { Block } from '../extract/types.js';
import { isSpace, isWordChar } from './chars.js';
import { type Section, sectionAt } from './structure.js';

/** A chunk as the quality figures see it: offsets into the text, and the heading path when the chunker gives one. */
export interface QualityChunk {
  start: number;
  end: number;
  headingPath?: readonly string[];
  /** when given, checked against text.slice(start, end) */
  content?: string;
}

export interface ChunkQualityOptions {
  /** the size cap the chunker was given (characters) */
  maxChars: number;
  /** chunks under this many characters count as tiny (a quarter of the target) */
  tinyChars: number;
  /** the document's blocks: needed for the heading-at-end figure */
  blocks?: readonly Block[];
  /** the document's sections: needed for the heading-path figure */
  sections?: readonly Section[];
}

export interface ChunkQuality {
  chunks: number;
  meanChars: number;
  /** share of chunks whose content equals text.slice(start, end) (1 when no content is given) */
  offsetsExact: number;
  midWordStart: number;
  midWordEnd: number;
  /** share of chunks ending at a sentence end (. ! ? … with closing quotes/brackets) or a paragraph end */
  endsAtSentenceOrParagraph: number;
  /** share of chunks whose last block is a heading whose body starts in a later chunk */
  headingAtEnd: number;
  /** share of chunks under tinyChars */
  tiny: number;
  /** chunks longer than 1.1 x maxChars */
  overCap: number;
  /**
   * mean overlap (shared characters / chunk length) over consecutive pairs cut inside one section, the
   * pairs where overlap carries context; null when no such pair exists
   */
  overlapContinued: number | null;
  /** mean overlap over all consecutive pairs */
  overlapAll: number;
  /** consecutive pairs cut inside one section (the base of overlapContinued) */
  continuedPairs: number;
  /** share of chunks whose heading path is that of the section they start in; null when chunks carry none */
  headingPathCorrect: number | null;
}

function endsAtSentence(text: string, end: number): boolean {
  let e = end;
  while (e > 0 && isSpace(text.charCodeAt(e - 1))) e--;
  // closing quotes and brackets may follow the terminator
  while (e > 0 && '"\')]}“”’»«'.includes(text[e - 1] as string)) e--;
  const c = text[e - 1];
  return c === '.' || c === '!' || c === '?' || c === '…';
}

function endsAtParagraph(text: string, end: number): boolean {
  let i = end;
  let newlines = 0;
  while (i < text.length && isSpace(text.charCodeAt(i))) {
    if (text.charCodeAt(i) === 10) newlines++;
    i++;
  }
  return i >= text.length || newlines >= 2;
}

/** Index of the last block starting before `offset` (blocks sorted by start), or -1. */
function blockBefore(blocks: readonly Block[], offset: number): number {
  let lo = 0;
  let hi = blocks.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((blocks[mid] as Block).start < offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

function isHeading(b: Block | undefined): boolean {
  return b !== undefined && (b.type === 'heading' || b.type === 'title');
}

function headingLevel(b: Block): number {
  return b.type === 'title' ? 0 : (b.level ?? 1);
}

function sameSection(sections: readonly Section[] | undefined, a: number, b: number): boolean {
  if (!sections || sections.length === 0) return true;
  return sectionAt(sections, a) === sectionAt(sections, b);
}

/**
 * Quality figures of a chunking, for cpe's chunks and for any other splitter's (LangChain's chunks get
 * offsets from `locateChunks`). Used by the bench, the eval script and the tests.
 */
export function chunkQuality(
  text: string,
  chunks: readonly QualityChunk[],
  opts: ChunkQualityOptions,
): ChunkQuality {
  const n = chunks.length;
  let exact = 0;
  let midStart = 0;
  let midEnd = 0;
  let sentenceEnd = 0;
  let headingEnd = 0;
  let tiny = 0;
  let overCap = 0;
  let chars = 0;
  let pathChecked = 0;
  let pathOk = 0;
  let overlapAllSum = 0;
  let overlapContSum = 0;
  let overlapContPairs = 0;
  const blocks = opts.blocks ?? [];
  for (let k = 0; k < n; k++) {
    const c = chunks[k] as QualityChunk;
    const len = c.end - c.start;
    chars += len;
    if (c.content === undefined || c.content === text.slice(c.start, c.end)) exact++;
    if (c.start > 0 && isWordChar(text.charCodeAt(c.start - 1)) && isWordChar(text.charCodeAt(c.start)))
      midStart++;
    if (
      c.end < text.length &&
      c.end > 0 &&
      isWordChar(text.charCodeAt(c.end - 1)) &&
      isWordChar(text.charCodeAt(c.end))
    ) {
      midEnd++;
    }
    if (endsAtSentence(text, c.end) || endsAtParagraph(text, c.end)) sentenceEnd++;
    if (len < opts.tinyChars) tiny++;
    if (len > 1.1 * opts.maxChars) overCap++;
    if (blocks.length > 0) {
      let e = c.end;
      while (e > c.start && isSpace(text.charCodeAt(e - 1))) e--;
      const bi = blockBefore(blocks, e);
      const b = blocks[bi];
      const next = blocks[bi + 1];
      if (
        b &&
        isHeading(b) &&
        b.start >= c.start &&
        b.end <= c.end &&
        next &&
        next.start >= c.end &&
        !(isHeading(next) && headingLevel(next) <= headingLevel(b))
      ) {
        headingEnd++;
      }
    }
    if (c.headingPath && opts.sections && opts.sections.length > 0) {
      pathChecked++;
      const s = opts.sections[Math.max(0, sectionAt(opts.sections, c.start))] as Section;
      if (
        s.headingPath.length === c.headingPath.length &&
        s.headingPath.every((h, i) => h === c.headingPath?.[i])
      )
        pathOk++;
    }
    if (k > 0) {
      const prev = chunks[k - 1] as QualityChunk;
      const shared = Math.max(0, prev.end - c.start);
      const ratio = len > 0 ? Math.min(shared, len) / len : 0;
      overlapAllSum += ratio;
      // the cut lies inside one section when the last character of the previous chunk and the first new
      // character of this one share a section
      let q = Math.max(c.start, prev.end);
      while (q < c.end - 1 && isSpace(text.charCodeAt(q))) q++;
      if (sameSection(opts.sections, Math.max(prev.start, prev.end - 1), q)) {
        overlapContSum += ratio;
        overlapContPairs++;
      }
    }
  }
  const share = (x: number) => (n === 0 ? 0 : x / n);
  return {
    chunks: n,
    meanChars: n === 0 ? 0 : chars / n,
    offsetsExact: share(exact),
    midWordStart: share(midStart),
    midWordEnd: share(midEnd),
    endsAtSentenceOrParagraph: share(sentenceEnd),
    headingAtEnd: share(headingEnd),
    tiny: share(tiny),
    overCap,
    overlapContinued: overlapContPairs === 0 ? null : overlapContSum / overlapContPairs,
    overlapAll: n > 1 ? overlapAllSum / (n - 1) : 0,
    continuedPairs: overlapContPairs,
    headingPathCorrect: pathChecked === 0 ? null : pathOk / pathChecked,
  };
}

/**
 * Finds the offsets of chunk strings produced by a splitter that does not report them (LangChain): each
 * chunk is searched forward from just after the previous chunk's start; when the splitter changed white
 * space (trimmed or re-joined pieces), a white-space-insensitive match is tried. Unfound chunks are null.
 */
export function locateChunks(
  text: string,
  contents: readonly string[],
): Array<{ start: number; end: number } | null> {
  const out: Array<{ start: number; end: number } | null> = [];
  let from = 0;
  for (const content of contents) {
    let at = text.indexOf(content, from);
    let end = at >= 0 ? at + content.length : -1;
    if (at < 0) {
      const m = looseMatch(text, content, from);
      if (m) {
        at = m.start;
        end = m.end;
      }
    }
    if (at < 0) {
      out.push(null);
      continue;
    }
    out.push({ start: at, end });
    from = at + 1;
  }
  return out;
}

/** Match of `needle` in `text` from `from`, treating any run of white space as equal to any other. */
function looseMatch(text: string, needle: string, from: number): { start: number; end: number } | null {
  const words = needle.split(/\s+/).filter((w) => w !== '');
  if (words.length === 0) return null;
  const first = words[0] as string;
  let at = text.indexOf(first, from);
  while (at >= 0) {
    let p = at + first.length;
    let ok = true;
    for (let w = 1; w < words.length && ok; w++) {
      let q = p;
      while (q < text.length && isSpace(text.charCodeAt(q))) q++;
      if (q === p || !text.startsWith(words[w] as string, q)) ok = false;
      else p = q + (words[w] as string).length;
    }
    if (ok) return { start: at, end: p };
    at = text.indexOf(first, at + 1);
  }
  return null;
}

/** Combines per-document figures into corpus figures (weighted by chunks, overlap by pairs). */
export function mergeChunkQuality(parts: readonly ChunkQuality[]): ChunkQuality {
  const chunks = parts.reduce((a, p) => a + p.chunks, 0);
  const w = (f: (p: ChunkQuality) => number) =>
    chunks === 0 ? 0 : parts.reduce((a, p) => a + f(p) * p.chunks, 0) / chunks;
  const pairs = parts.reduce((a, p) => a + Math.max(0, p.chunks - 1), 0);
  const contPairs = parts.reduce((a, p) => a + p.continuedPairs, 0);
  const checked = parts.filter((p) => p.headingPathCorrect !== null);
  const checkedChunks = checked.reduce((a, p) => a + p.chunks, 0);
  return {
    chunks,
    meanChars: w((p) => p.meanChars),
    offsetsExact: w((p) => p.offsetsExact),
    midWordStart: w((p) => p.midWordStart),
    midWordEnd: w((p) => p.midWordEnd),
    endsAtSentenceOrParagraph: w((p) => p.endsAtSentenceOrParagraph),
    headingAtEnd: w((p) => p.headingAtEnd),
    tiny: w((p) => p.tiny),
    overCap: parts.reduce((a, p) => a + p.overCap, 0),
    overlapContinued:
      contPairs === 0
        ? null
        : parts.reduce((a, p) => a + (p.overlapContinued ?? 0) * p.continuedPairs, 0) / contPairs,
    overlapAll:
      pairs === 0 ? 0 : parts.reduce((a, p) => a + p.overlapAll * Math.max(0, p.chunks - 1), 0) / pairs,
    continuedPairs: contPairs,
    headingPathCorrect:
      checkedChunks === 0
        ? null
        : checked.reduce((a, p) => a + (p.headingPathCorrect ?? 0) * p.chunks, 0) / checkedChunks,
  };
}
