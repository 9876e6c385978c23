import { ConfigError, ErrorCodes } from '../errors.js';
import type { ExtractedDocument } from '../extract/types.js';
import { isSpace, isWordChar, scratchCodeUnits } from './chars.js';
import { type ChunkSectionStart, sectionStart } from './section-starts.js';
import { type BlockVisitor, type Segment, type SegmentType, walkBlocks } from './segment.js';
import { SentenceList, scanSentences } from './sentences.js';
import { pageAt, type Section, SectionOutline } from './structure.js';
import { countTokens, thirdsToTokens, tokenizerName, weightThirds } from './tokenizer.js';

/**
 * Chunk size rules.
 *
 * Two limits, both enforced: `maxChars` (the original system's 2000 characters, a hard cap on the source
 * text of a chunk) and `targetTokens` (the 500-800 token target of the issue). A chunk grows until the next
 * sentence would break either. Why both, and why these defaults: measured with cl100k on the German
 * corpus, German runs at about 3.3 characters per token (laws) to 3.6 (handbook prose), and cpe's
 * estimating tokenizer is calibrated to that. So 2000 characters are about 560-600 tokens and the default
 * targetTokens 600 and maxChars 2000 bind at nearly the same point for German prose: chunks land in the
 * 500-600 token range the retrieval side expects. For token-dense text (numbers, tables, code, citations)
 * the token limit binds first; for a user who raises max_chars, target_tokens keeps chunks near the
 * target. "Tiny" (for merging decisions and the quality figures) means under a quarter of the effective
 * target, min(maxChars, targetTokens * 3.3) characters, i.e. about 500 characters by default.
 */
export interface ChunkConfig {
  /** token budget per chunk (counted by src/text/tokenizer.ts) */
  targetTokens: number;
  /** share of a chunk repeated at the start of the next one when a section continues (0..0.5) */
  overlapRatio: number;
  /** a part smaller than this is never a chunk of its own when it has a neighbour */
  minChars: number;
  /** hard cap on the source characters of a chunk */
  maxChars: number;
}

export const defaultChunkConfig: ChunkConfig = {
  targetTokens: 600,
  overlapRatio: 0.1,
  minChars: 100,
  maxChars: 2000,
};

/** Characters per token of German text under cpe's tokenizer (see tokenizer.ts), used to turn token targets into sizes. */
export const GERMAN_CHARS_PER_TOKEN = 3.3;

/** JSON Schema (ajv) of the user-facing config, snake_case as users edit it in pipeline_steps.config. */
export const chunkConfigSchema = {
  type: 'object',
  properties: {
    target_tokens: {
      type: 'integer',
      minimum: 20,
      maximum: 32000,
      default: defaultChunkConfig.targetTokens,
      description:
        'token budget per chunk; chunks close at this many tokens or max_chars, whichever comes first',
    },
    overlap: {
      type: 'number',
      minimum: 0,
      maximum: 0.5,
      default: defaultChunkConfig.overlapRatio,
      description:
        'share of a chunk repeated (whole sentences) at the start of the next chunk of the same section',
    },
    min_chars: {
      type: 'integer',
      minimum: 0,
      default: defaultChunkConfig.minChars,
      description: 'parts smaller than this are merged into a neighbour',
    },
    max_chars: {
      type: 'integer',
      minimum: 50,
      maximum: 100000,
      default: defaultChunkConfig.maxChars,
      description: 'hard cap on the characters of source text in a chunk',
    },
  },
} as const;

/** ChunkConfig from validated snake_case step config (missing keys take the defaults). */
export function chunkConfigFromJson(json: Record<string, unknown>): ChunkConfig {
  const pick = (key: string, fallback: number): number => {
    const v = json[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new ConfigError(ErrorCodes.CONFIG_INVALID, `config.${key} must be a number`);
    }
    return v;
  };
  const config: ChunkConfig = {
    targetTokens: pick('target_tokens', defaultChunkConfig.targetTokens),
    overlapRatio: pick('overlap', defaultChunkConfig.overlapRatio),
    minChars: pick('min_chars', defaultChunkConfig.minChars),
    maxChars: pick('max_chars', defaultChunkConfig.maxChars),
  };
  checkChunkConfig(config);
  return config;
}

/** Checks what the schema cannot express (relations between keys). */
export function checkChunkConfig(config: ChunkConfig): void {
  if (config.maxChars < 50)
    throw new ConfigError(ErrorCodes.CONFIG_INVALID, 'config.max_chars must be >= 50');
  if (config.targetTokens < 20)
    throw new ConfigError(ErrorCodes.CONFIG_INVALID, 'config.target_tokens must be >= 20');
  if (config.overlapRatio < 0 || config.overlapRatio > 0.5) {
    throw new ConfigError(ErrorCodes.CONFIG_INVALID, 'config.overlap must be between 0 and 0.5');
  }
  if (config.minChars < 0 || config.minChars >= config.maxChars) {
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `config.min_chars (${config.minChars}) must be >= 0 and below config.max_chars (${config.maxChars})`,
    );
  }
}

/** Characters under which a chunk counts as tiny: a quarter of the effective target size. */
export function tinyChunkChars(config: ChunkConfig): number {
  return Math.floor(Math.min(config.maxChars, config.targetTokens * GERMAN_CHARS_PER_TOKEN) / 4);
}

export type ChunkCut = 'section' | 'paragraph' | 'sentence' | 'word' | 'end';

export interface ChunkMetadata {
  /** characters at the start of this chunk repeated from the end of the previous one (0 at a section start) */
  overlapChars: number;
  /** what the chunk ends at */
  cut: ChunkCut;
  tokenizer: string;
  /** index of the last section the chunk reaches into (sectionIndex is where it starts) */
  lastSectionIndex: number;
  /**
   * the sections that start inside the chunk (short sections share one): where each starts in `content`, its
   * heading path (see section-starts.ts) and page; absent when the chunk lies in one section. Search cites the one
   * a query matches best.
   */
  sectionStarts?: ChunkSectionStart[];
  /** pages whose vision description was appended to `content` (see ChunkDraft) */
  visionPages?: number[];
  /** characters of appended vision text, including its labels */
  visionChars?: number;
  [key: string]: unknown;
}

/**
 * One chunk before it is stored. `start`/`end` are exact offsets into the extracted text and
 * `content === text.slice(start, end)`, with one exception: when a page's vision description is appended
 * (`metadata.visionPages`), `content` is the source slice followed by "\n\n[Bildbeschreibung Seite N]\n"
 * and the description, while `start`/`end` still point at the source text only.
 */
export interface ChunkDraft {
  index: number;
  content: string;
  start: number;
  end: number;
  tokenCount: number;
  headingPath: string[];
  pageStart: number;
  pageEnd: number;
  sectionIndex: number;
  metadata: ChunkMetadata;
}

export type ChunkInput = Pick<ExtractedDocument, 'text' | 'blocks' | 'pages'>;

export interface ChunkOptions {
  config?: Partial<ChunkConfig>;
  /** from the structure step; computed when absent (the Standard pipeline has no structure step) */
  sections?: Section[];
  /** from the segment step; computed when absent */
  segments?: Segment[];
  /** vision descriptions by 1-based page number */
  pageVisionText?: Map<number, string>;
}

/*
 * Units: the pieces the packer moves whole (a sentence, a list item, a table, a heading, or part of an
 * oversized one), held as parallel typed arrays: a document has tens of thousands of them, and objects
 * per unit cost more in allocation and garbage collection than the packing itself.
 */
const PARAGRAPH_START = 1; // first unit of a segment (a paragraph boundary lies before it)
const SECTION_START = 2; // first unit of a section
const CONTINUES_WORD = 4; // the rest of a sentence or block cut at a word boundary
const CLEAN_GAP = 8; // only white space (at least one character) separates it from the previous unit

class Units {
  count = 0;
  start = new Int32Array(256);
  end = new Int32Array(256);
  section = new Int32Array(256);
  /** level of the section when this unit is its heading, else -1 */
  headingLevel = new Int8Array(256);
  flags = new Uint8Array(256);
  /** weight (thirds of a token) of the unit together with the white space before it */
  tokens = new Float64Array(256);
  /** weight (thirds) of the white space between the previous unit and this one */
  gap = new Float64Array(256);
  /** prefix sums of `tokens`: prefix[i] is the weight of units 0..i-1 (filled by sumTokens) */
  prefix = new Float64Array(257);

  /** Empties the list for the next document, keeping its memory. */
  reset(): void {
    this.count = 0;
  }

  push(
    start: number,
    end: number,
    section: number,
    headingLevel: number,
    flags: number,
    weight: number,
    gap: number,
  ): void {
    if (this.count === this.start.length) this.grow();
    const k = this.count++;
    this.start[k] = start;
    this.end[k] = end;
    this.section[k] = section;
    this.headingLevel[k] = headingLevel;
    this.flags[k] = flags;
    this.tokens[k] = gap + weight;
    this.gap[k] = gap;
  }

  sumTokens(): void {
    const { prefix, tokens } = this;
    prefix[0] = 0;
    for (let i = 0; i < this.count; i++) prefix[i + 1] = (prefix[i] as number) + (tokens[i] as number);
  }

  private grow(): void {
    const size = this.start.length * 2;
    const grown = <T extends Int32Array | Int8Array | Uint8Array | Float64Array>(a: T, b: T): T => {
      b.set(a as never);
      return b;
    };
    this.start = grown(this.start, new Int32Array(size));
    this.end = grown(this.end, new Int32Array(size));
    this.section = grown(this.section, new Int32Array(size));
    this.headingLevel = grown(this.headingLevel, new Int8Array(size));
    this.flags = grown(this.flags, new Uint8Array(size));
    this.tokens = grown(this.tokens, new Float64Array(size));
    this.gap = grown(this.gap, new Float64Array(size));
    this.prefix = new Float64Array(size + 1);
  }
}

/** Lists grown beyond this many entries by a huge document are not kept for the next one. */
const SHARED_MAX_UNITS = 1 << 16;

/** Whether a cut at p would part a surrogate pair (an emoji, a rare CJK character) into two halves. */
const splitsPair = (codes: Uint16Array, p: number): boolean =>
  ((codes[p - 1] as number) & 0xfc00) === 0xd800 && ((codes[p] as number) & 0xfc00) === 0xdc00;

/** Room the headings right before a span take in its first piece: characters and weight (thirds). */
interface HeadingRoom {
  chars: number;
  thirds: number;
}

const NO_HEADING_ROOM: HeadingRoom = { chars: 0, thirds: 0 };

/**
 * Splits an oversized span at line breaks (tables, code) or word boundaries so every piece fits both limits (the
 * last one too: a span under the characters but over the tokens is split as well); the first piece leaves room for
 * the `reserved` characters and weight before it (the headings it follows). When the rest would fit two pieces but
 * leave the second a scrap, it is cut near its middle instead.
 */
function splitOversized(
  text: string,
  codes: Uint16Array,
  start: number,
  end: number,
  maxChars: number,
  maxTokens: number,
  preferLines: boolean,
  reserved: HeadingRoom = NO_HEADING_ROOM,
): number[] {
  const pieces: number[] = []; // start, end, start, end, ...
  let s = start;
  while (s < end) {
    const first = s === start;
    const charLimit = first ? maxChars - reserved.chars : maxChars;
    // a piece's tokens are its weight rounded, while the packer adds the weights of headings and piece: a third
    // more than the headings' weight keeps that sum within the budget whatever the rounding
    const tokenLimit = first && reserved.chars > 0 ? maxTokens - (reserved.thirds + 1) / 3 : maxTokens;
    let limit = Math.min(end, s + charLimit);
    // two pieces would do, but greedily the second would be a scrap (under a quarter of a chunk): halves
    if (limit < end && end - s <= 2 * charLimit && end - limit < maxChars / 4)
      limit = s + Math.ceil((end - s) / 2);
    // shrink until the token budget holds as well (token-dense text: numbers, symbols, emoji)
    const byChars = limit;
    let tokens = thirdsToTokens(weightThirds(codes, s, limit));
    while (tokens > tokenLimit && limit - s > 20) {
      limit = s + Math.max(20, Math.floor(((limit - s) * tokenLimit) / tokens));
      tokens = thirdsToTokens(weightThirds(codes, s, limit));
    }
    // beside headings the token budget can leave a scrap as well (a sentence just over it with them): halves
    if (
      first &&
      reserved.chars > 0 &&
      limit < byChars &&
      end - limit < maxChars / 4 &&
      end - s <= 2 * (limit - s)
    )
      limit = s + Math.ceil((end - s) / 2);
    if (limit >= end) {
      pieces.push(s, end);
      break;
    }
    let cut = -1;
    const floor = s + Math.floor((limit - s) / 2);
    if (preferLines) {
      for (let p = limit; p > floor; p--) {
        if (text.charCodeAt(p - 1) === 10) {
          cut = p;
          break;
        }
      }
    }
    if (cut < 0) {
      for (let p = limit; p > floor; p--) {
        if (isSpace(text.charCodeAt(p))) {
          cut = p;
          break;
        }
      }
    }
    if (cut < 0) {
      // no space in the second half: cut between a word character and anything else, or hard as a last resort;
      // never between the halves of a surrogate pair
      cut = splitsPair(codes, limit) && limit - 1 > s ? limit - 1 : limit;
      for (let p = limit; p > floor; p--) {
        if (
          (!isWordChar(text.charCodeAt(p - 1)) || !isWordChar(text.charCodeAt(p))) &&
          !splitsPair(codes, p)
        ) {
          cut = p;
          break;
        }
      }
    }
    let e = cut;
    while (e > s && isSpace(text.charCodeAt(e - 1))) e--;
    if (e <= s) e = cut;
    pieces.push(s, e);
    s = cut;
    while (s < end && isSpace(text.charCodeAt(s))) s++;
  }
  return pieces;
}

/** The outline of no sections, held by the shared builder between documents. */
const EMPTY_OUTLINE = SectionOutline.fromSections([]);

/**
 * Turns blocks and sentences into units, computing the gap before each from the previous unit's end.
 * One builder is reused for every document (see takeBuilder): a builder or closure made per call lets
 * the optimizer embed that call's objects in its code, and the code is thrown away at every garbage
 * collection once they die, which cost a third of the run time when another library allocates in between.
 */
class UnitBuilder implements BlockVisitor {
  readonly units = new Units();
  readonly list = new SentenceList();
  private text = '';
  private codes: Uint16Array = new Uint16Array(0);
  private outline: SectionOutline = EMPTY_OUTLINE;
  private config: ChunkConfig = defaultChunkConfig;
  private prevEnd = 0;
  private firstInSegment = true;
  private sectionStart = false;
  private lastSection = -1;
  private section = 0;
  private headingLevel = -1;

  begin(text: string, codes: Uint16Array, outline: SectionOutline, config: ChunkConfig): void {
    this.text = text;
    this.codes = codes;
    this.outline = outline;
    this.config = config;
    this.units.reset();
    this.list.clear();
    this.prevEnd = 0;
    this.firstInSegment = true;
    this.sectionStart = false;
    this.lastSection = -1;
    this.section = 0;
    this.headingLevel = -1;
  }

  /** Drops the references to the document, so the builder does not keep it alive. */
  end(): void {
    this.text = '';
    this.codes = new Uint16Array(0);
    this.outline = EMPTY_OUTLINE;
  }

  /** A block of walkBlocks: its sentences (prose) or the whole block as one unit. */
  block(
    type: SegmentType,
    start: number,
    end: number,
    sectionIndex: number,
    _page: number,
    prose: boolean,
  ): void {
    this.segment(sectionIndex, type === 'heading');
    if (prose) {
      const list = this.list;
      list.clear();
      scanSentences(this.text, this.codes, start, end, list);
      if (list.count > 0) {
        this.sentences(list);
        return;
      }
    }
    this.span(start, end, weightThirds(this.codes, start, end), type === 'table' || type === 'code');
  }

  /** Starts a segment (a block): the next unit begins a paragraph, and a section when the section changes. */
  segment(sectionIndex: number, isHeading: boolean): void {
    this.section = sectionIndex;
    this.sectionStart = sectionIndex !== this.lastSection;
    this.lastSection = sectionIndex;
    const outline = this.outline;
    this.headingLevel = isHeading
      ? sectionIndex < outline.count
        ? (outline.level[sectionIndex] as number)
        : 1
      : -1;
    this.firstInSegment = true;
  }

  /** A unit with known weight and gap weight (thirds); the gap is white space when `cleanGap`. */
  private add(ps: number, pe: number, weight: number, gap: number, cleanGap: boolean, cont: boolean): void {
    let flags = cleanGap ? CLEAN_GAP : 0;
    if (this.firstInSegment) flags |= this.sectionStart ? PARAGRAPH_START | SECTION_START : PARAGRAPH_START;
    if (cont) flags |= CONTINUES_WORD;
    this.units.push(ps, pe, this.section, this.headingLevel, flags, weight, gap);
    this.prevEnd = pe;
    this.firstInSegment = false;
  }

  /** A unit whose weight (thirds) is known or -1; the gap before it is measured here. */
  unit(ps: number, pe: number, weight: number, cont: boolean): void {
    const codes = this.codes;
    const gapFrom = Math.min(this.prevEnd, ps);
    let clean = gapFrom < ps;
    let lineBreak = false;
    for (let g = gapFrom; clean && g < ps; g++) {
      const c = codes[g] as number;
      clean = isSpace(c);
      if (c === 10) lineBreak = true;
    }
    // white space alone is one run: a token when it holds a line break or more than one character
    const gap = clean
      ? lineBreak || ps - gapFrom > 1
        ? 3
        : 0
      : gapFrom < ps
        ? weightThirds(codes, gapFrom, ps)
        : 0;
    this.add(ps, pe, weight >= 0 ? weight : weightThirds(codes, ps, pe), gap, clean, cont);
  }

  /**
   * The room the heading units right before `ps` take (characters from the first of them, and weight with the
   * white space up to `ps`): its own heading and the headings right above it with no text between ("# Handbuch"
   * over "## Einleitung"). The first piece of a span that follows them directly leaves them that much, so that
   * headings and piece fit one chunk (the headings alone would be a chunk of their own). Nothing when there are
   * no such headings or they would take more than half a chunk.
   */
  private headingRoom(ps: number): HeadingRoom {
    const { units, config } = this;
    let k = units.count - 1;
    let from = ps;
    while (k >= 0 && (units.headingLevel[k] as number) >= 0) {
      from = units.start[k] as number;
      k--;
    }
    const chars = ps - from;
    if (chars === 0 || chars > config.maxChars / 2) return NO_HEADING_ROOM;
    return { chars, thirds: weightThirds(this.codes, from, ps) };
  }

  /**
   * A sentence or block: one unit, or pieces cut at line breaks or word boundaries when it is oversized. The first
   * unit of a heading's body is cut as well when it fits a chunk alone but not beside its headings: whole, it
   * would leave them a chunk without text.
   */
  span(ps: number, pe: number, weight: number, preferLines: boolean): void {
    const config = this.config;
    const maxThirds = config.targetTokens * 3;
    const fits = pe - ps <= config.maxChars && weight <= maxThirds;
    const units = this.units;
    const afterHeading =
      this.headingLevel < 0 && units.count > 0 && (units.headingLevel[units.count - 1] as number) >= 0;
    const room = afterHeading || !fits ? this.headingRoom(ps) : NO_HEADING_ROOM;
    if (fits && pe - ps + room.chars <= config.maxChars && weight + room.thirds <= maxThirds) {
      this.unit(ps, pe, weight, false);
      return;
    }
    const pieces = splitOversized(
      this.text,
      this.codes,
      ps,
      pe,
      config.maxChars,
      config.targetTokens,
      preferLines,
      room,
    );
    for (let k = 0; k < pieces.length; k += 2)
      this.unit(pieces[k] as number, pieces[k + 1] as number, -1, k > 0);
  }

  /** The sentences of a prose block, found by scanSentences with their weights and white-space gaps. */
  sentences(list: SentenceList): void {
    const config = this.config;
    const maxThirds = config.targetTokens * 3;
    for (let k = 0; k < list.count; k++) {
      const ps = list.start[k] as number;
      const pe = list.end[k] as number;
      const weight = list.weight[k] as number;
      // a sentence after the first of its block follows white space the scan has weighed already
      if (k > 0 && pe - ps <= config.maxChars && weight <= maxThirds)
        this.add(ps, pe, weight, list.gap[k] as number, true, false);
      else this.span(ps, pe, weight, false);
    }
  }
}

let sharedBuilder: UnitBuilder | null = null;
const NO_SEGMENT_OPTIONS = {};

/** The shared builder, or a new one when it is in use (a nested call; none today). */
function takeBuilder(): UnitBuilder {
  const builder = sharedBuilder ?? new UnitBuilder();
  sharedBuilder = null;
  return builder;
}

/** Returns the builder for the next document, unless a huge document grew its lists. */
function returnBuilder(builder: UnitBuilder): void {
  builder.end();
  if (builder.units.start.length <= SHARED_MAX_UNITS && builder.list.start.length <= SHARED_MAX_UNITS)
    sharedBuilder = builder;
}

/** Units from segments made earlier (the segment step): their sentences, weighed where they lack a weight. */
function unitsFromSegments(builder: UnitBuilder, codes: Uint16Array, segments: readonly Segment[]): void {
  for (const seg of segments) {
    builder.segment(seg.sectionIndex, seg.type === 'heading');
    const preferLines = seg.type === 'table' || seg.type === 'code';
    for (const s of seg.sentences) {
      const weight = s.weight === undefined ? weightThirds(codes, s.start, s.end) : Math.round(s.weight * 3);
      builder.span(s.start, s.end, weight, preferLines);
    }
  }
}

/**
 * Groups of units that may share chunks: one per top-level section. Neighbouring groups merge only when
 * both are tiny (and fit together); a group under min_chars joins its neighbour regardless, since a
 * chunk of a few words ("§ 3 (weggefallen)") helps no search. Returns [from, to, from, to, ...].
 */
function groupUnits(units: Units, outline: SectionOutline, config: ChunkConfig): number[] {
  // separate functions for the loops: see buildSections on long loops followed by more code
  const raw = topLevelRuns(units, outline);
  const span = (g: number[], k: number) =>
    (units.end[(g[k + 1] as number) - 1] as number) - (units.start[g[k] as number] as number);
  const tiny = tinyChunkChars(config);
  const merged: number[] = [];
  for (let k = 0; k < raw.length; k += 2) {
    const p = merged.length - 2;
    if (
      p >= 0 &&
      span(merged, p) < tiny &&
      span(raw, k) < tiny &&
      (units.end[(raw[k + 1] as number) - 1] as number) - (units.start[merged[p] as number] as number) <=
        config.maxChars
    ) {
      merged[p + 1] = raw[k + 1] as number;
    } else merged.push(raw[k] as number, raw[k + 1] as number);
  }
  const out: number[] = [];
  for (let k = 0; k < merged.length; k += 2) {
    const p = out.length - 2;
    if (p >= 0 && (span(merged, k) < config.minChars || span(out, p) < config.minChars))
      out[p + 1] = merged[k + 1] as number;
    else out.push(merged[k] as number, merged[k + 1] as number);
  }
  return out;
}

/** Runs of units in one top-level section, as [from, to, from, to, ...]. */
function topLevelRuns(units: Units, outline: SectionOutline): number[] {
  const topOf = outline.topLevels();
  const section = units.section;
  const raw: number[] = [];
  let from = 0;
  let top = -2;
  for (let i = 0; i < units.count; i++) {
    const sec = section[i] as number;
    const t = sec < topOf.length ? (topOf[sec] as number) : 0;
    if (t !== top) {
      if (i > from) raw.push(from, i);
      from = i;
      top = t;
    }
  }
  if (units.count > from) raw.push(from, units.count);
  return raw;
}

/** boundaryBonus result for a cut that would leave a heading at the end of a chunk with its body in the next. */
const NO_CUT = -1000;

/** Bonus of the boundary after unit j (before unit j+1), or NO_CUT. */
function boundaryBonus(units: Units, j: number): number {
  const level = units.headingLevel[j] as number;
  const nextLevel = units.headingLevel[j + 1] as number;
  if (level >= 0 && !(nextLevel >= 0 && nextLevel <= level)) return NO_CUT;
  const next = units.flags[j + 1] as number;
  if ((next & CONTINUES_WORD) !== 0) return -0.5;
  if ((next & SECTION_START) !== 0) return 0.3 + (nextLevel >= 0 && nextLevel <= 2 ? 0.1 : 0);
  if ((next & PARAGRAPH_START) !== 0) return 0.15;
  return 0;
}

const CUT_NAMES: readonly ChunkCut[] = ['end', 'section', 'paragraph', 'sentence', 'word'];

/** Chunk plans, four numbers each: first unit, last unit, first overlap unit, index into CUT_NAMES. */
type Plans = number[];

/** Packs one group's units into chunk plans. */
function packGroup(
  units: Units,
  from: number,
  to: number,
  config: ChunkConfig,
  prefixTokens: Float64Array,
  plans: Plans,
): void {
  const { start, end, gap, flags, section, headingLevel } = units;
  const maxChars = config.maxChars;
  const maxThirds = config.targetTokens * 3;
  const tiny = tinyChunkChars(config);
  const groupEnd = end[to - 1] as number;
  let first = from;
  let ov = from;
  while (first < to) {
    let cs = start[ov] as number;
    // overlap must leave room for at least the first new unit
    if (
      ov < first &&
      ((end[first] as number) - cs > maxChars ||
        (prefixTokens[first + 1] as number) - (prefixTokens[ov] as number) - (gap[ov] as number) > maxThirds)
    ) {
      ov = first;
      cs = start[ov] as number;
    }
    const base = (prefixTokens[ov] as number) + (gap[ov] as number);
    let k = first;
    while (
      k + 1 < to &&
      (end[k + 1] as number) - cs <= maxChars &&
      (prefixTokens[k + 2] as number) - base <= maxThirds
    )
      k++;
    if (k === to - 1) {
      plans.push(first, k, ov, 0);
      return;
    }
    // choose the cut after unit j in [first, k]: fuller is better, paragraph and section ends earn a bonus,
    // a heading must not be left at the end, and a tiny remainder of the group must not be left over
    let best = -1;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let j = k; j >= first; j--) {
      const bonus = boundaryBonus(units, j);
      if (bonus === NO_CUT) continue;
      const fill = ((end[j] as number) - cs) / maxChars;
      const rest = groupEnd - (start[j + 1] as number);
      let score = fill + bonus;
      if (fill < 0.5) score -= 1; // a half-empty chunk only when nothing better exists
      if (rest < tiny) score -= 2;
      if (score > bestScore) {
        bestScore = score;
        best = j;
      }
      if (fill < 0.25) break;
    }
    if (best < 0) best = k; // only dangling-heading cuts exist (a run of headings longer than a chunk)
    const nextFlags = flags[best + 1] as number;
    const cut =
      (nextFlags & CONTINUES_WORD) !== 0
        ? 4
        : (nextFlags & SECTION_START) !== 0
          ? 1
          : (nextFlags & PARAGRAPH_START) !== 0
            ? 2
            : 3;
    plans.push(first, best, ov, cut);
    // overlap: whole sentences from the end of this chunk, only when the next chunk continues the same
    // section; about overlapRatio of this chunk's length, the last sentence alone may run to twice that
    // so that long legal sentences still carry context
    let nextOv = best + 1;
    if ((nextFlags & (SECTION_START | CONTINUES_WORD)) === 0 && config.overlapRatio > 0) {
      const bestEnd = end[best] as number;
      const budget = config.overlapRatio * (bestEnd - cs);
      const nextSection = section[best + 1] as number;
      let m = best;
      while (m > first) {
        if (
          section[m] !== nextSection ||
          (headingLevel[m] as number) >= 0 ||
          ((flags[m] as number) & CONTINUES_WORD) !== 0
        )
          break;
        const len = bestEnd - (start[m] as number);
        if (len > (m === best ? 2 * budget : budget)) break;
        nextOv = m;
        m--;
      }
    }
    first = best + 1;
    ov = nextOv;
  }
}

function attachVision(
  drafts: ChunkDraft[],
  text: string,
  doc: ChunkInput,
  vision: Map<number, string>,
  outline: SectionOutline,
): void {
  const pages = [...vision.entries()].filter(([, v]) => v.trim() !== '').sort((a, b) => a[0] - b[0]);
  for (const [page, raw] of pages) {
    const description = raw.trim();
    let target = drafts.find((d) => d.pageStart <= page && page <= d.pageEnd);
    if (!target) target = [...drafts].reverse().find((d) => d.pageEnd < page) ?? drafts[0];
    const label = `[Bildbeschreibung Seite ${page}]`;
    if (!target) {
      // no text at all (a scan): the description is the only content there is
      const info = doc.pages.find((p) => p.number === page);
      const at = info ? info.start : text.length;
      const content = `${label}\n${description}`;
      const section = Math.max(0, outline.sectionAt(at));
      drafts.push({
        index: drafts.length,
        content,
        start: at,
        end: at,
        tokenCount: countTokens(content),
        headingPath: section < outline.count ? [...outline.headingPath(section)] : [],
        pageStart: page,
        pageEnd: page,
        sectionIndex: section,
        metadata: {
          overlapChars: 0,
          cut: 'end',
          tokenizer: tokenizerName,
          lastSectionIndex: section,
          visionPages: [page],
          visionChars: content.length,
          visionOnly: true,
        },
      });
      continue;
    }
    const addition = `\n\n${label}\n${description}`;
    target.content += addition;
    target.metadata.visionPages = [...(target.metadata.visionPages ?? []), page];
    target.metadata.visionChars = (target.metadata.visionChars ?? 0) + addition.length;
    target.tokenCount = countTokens(target.content);
  }
  drafts.sort((a, b) => a.start - b.start || a.index - b.index);
  drafts.forEach((d, i) => {
    d.index = i;
  });
}

/**
 * Cuts a document into chunks: sentences and blocks are packed up to max_chars and target_tokens, cuts
 * fall only between sentences, list items, blocks or sections (a sentence longer than a chunk, or than the
 * room its headings leave it, is cut at a word boundary, a table or code block at a line break), a heading
 * is never the last thing in a chunk when its body follows, chunks never span two top-level sections unless
 * both are tiny, and a chunk that continues a section starts with the last sentence(s) of the previous chunk
 * (overlap). Every chunk carries exact offsets, the heading path of the text it starts in, its page range
 * and its token count.
 */
export function chunkDocument(doc: ChunkInput, opts: ChunkOptions = {}): ChunkDraft[] {
  const config: ChunkConfig = { ...defaultChunkConfig, ...opts.config };
  checkChunkConfig(config);
  const { text } = doc;
  // the heading tree without Section objects: heading texts and paths only for the chunks' sections
  const outline = opts.sections ? SectionOutline.fromSections(opts.sections) : SectionOutline.of(doc);
  const codes = scratchCodeUnits(text);
  // each loop lives in a function of its own (see buildSections on why)
  const builder = takeBuilder();
  builder.begin(text, codes, outline, config);
  if (opts.segments) unitsFromSegments(builder, codes, opts.segments);
  else walkBlocks(doc, outline, NO_SEGMENT_OPTIONS, builder, codes);
  const units = builder.units;
  units.sumTokens();
  const plans = planChunks(units, outline, config);
  const drafts = makeDrafts(doc, units, plans, outline);
  returnBuilder(builder);
  if (opts.pageVisionText && opts.pageVisionText.size > 0)
    attachVision(drafts, text, doc, opts.pageVisionText, outline);
  return drafts;
}

/** Chunk plans for all groups of units. */
function planChunks(units: Units, outline: SectionOutline, config: ChunkConfig): Plans {
  const plans: Plans = [];
  const groups = groupUnits(units, outline, config);
  for (let g = 0; g < groups.length; g += 2)
    packGroup(units, groups[g] as number, groups[g + 1] as number, config, units.prefix, plans);
  return plans;
}

/** The chunks of the plans: content, offsets, token count, heading path, pages, metadata. */
function makeDrafts(doc: ChunkInput, units: Units, plans: Plans, outline: SectionOutline): ChunkDraft[] {
  const { text, pages } = doc;
  const prefixTokens = units.prefix;
  const drafts: ChunkDraft[] = [];
  let prevEnd = -1;
  for (let p = 0; p < plans.length; p += 4) {
    const ov = plans[p + 2] as number;
    const last = plans[p + 1] as number;
    const start = units.start[ov] as number;
    const end = units.end[last] as number;
    const content = text.slice(start, end);
    const section = units.section[ov] as number;
    const lastSection = units.section[last] as number;
    // token count from the units' weights (one tokenizer pass for the whole document); pieces that were
    // not separated by white space could share a character run, so those chunks are counted afresh
    let clean = true;
    for (let u = ov + 1; clean && u <= last; u++) clean = ((units.flags[u] as number) & CLEAN_GAP) !== 0;
    const weight =
      (prefixTokens[last + 1] as number) - (prefixTokens[ov] as number) - (units.gap[ov] as number);
    drafts.push({
      index: drafts.length,
      content,
      start,
      end,
      tokenCount: clean ? thirdsToTokens(weight) : countTokens(content),
      headingPath: section < outline.count ? [...outline.headingPath(section)] : [],
      pageStart: pageAt(pages, start),
      pageEnd: pageAt(pages, Math.max(start, end - 1)),
      sectionIndex: section,
      metadata: {
        overlapChars: prevEnd > start ? prevEnd - start : 0,
        cut: CUT_NAMES[plans[p + 3] as number] as ChunkCut,
        tokenizer: tokenizerName,
        lastSectionIndex: lastSection,
        ...(lastSection !== section && {
          sectionStarts: sectionStartsIn(units, ov, last, outline, pages),
        }),
      },
    });
    prevEnd = end;
  }
  return drafts;
}

/** The sections that start among units first..last, relative to the first unit's start. */
function sectionStartsIn(
  units: Units,
  first: number,
  last: number,
  outline: SectionOutline,
  pages: ChunkInput['pages'],
): ChunkSectionStart[] {
  const start = units.start[first] as number;
  const starts: ChunkSectionStart[] = [];
  const pathOf = (section: number) => (section < outline.count ? outline.headingPath(section) : []);
  let section = units.section[first] as number;
  for (let u = first + 1; u <= last; u++) {
    const next = units.section[u] as number;
    if (next === section) continue;
    const at = units.start[u] as number;
    starts.push(sectionStart(at - start, pageAt(pages, at), pathOf(next), pathOf(section)));
    section = next;
  }
  return starts;
}
