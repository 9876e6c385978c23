import { ConfigError, ErrorCodes } from '../errors.js';
import type { ExtractedDocument } from '../extract/types.js';
import { isSpace, isWordChar } from './chars.js';
import { type Segment, segmentDocument } from './segment.js';
import { buildSections, pageAt, type Section, sectionAt, topLevelIndex } from './structure.js';
import { countTokens, countTokensInRange, tokenizerName, tokenWeight } from './tokenizer.js';

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

/** A piece the packer moves whole: a sentence, a list item, a table, a heading, or part of an oversized one. */
interface Unit {
  start: number;
  end: number;
  section: number;
  /** level of the section when this unit is its heading, else -1 */
  headingLevel: number;
  /** first unit of a segment (a paragraph boundary lies before it) */
  paragraphStart: boolean;
  /** first unit of a section */
  sectionStart: boolean;
  /** this unit is the rest of a sentence or block cut at a word boundary */
  continuesWord: boolean;
  /** unrounded token weight of the unit together with the white space before it */
  tokens: number;
  /** unrounded token weight of the white space between the previous unit and this one */
  gapTokens: number;
  /** only white space (at least one character) separates this unit from the previous one */
  cleanGap: boolean;
}

interface Plan {
  first: number;
  last: number;
  overlapFirst: number;
  cut: ChunkCut;
}

/** Splits an oversized span at line breaks (tables, code) or word boundaries so every piece fits both limits. */
function splitOversized(
  text: string,
  start: number,
  end: number,
  maxChars: number,
  maxTokens: number,
  preferLines: boolean,
): Array<[number, number]> {
  const pieces: Array<[number, number]> = [];
  let s = start;
  while (s < end) {
    let limit = Math.min(end, s + maxChars);
    if (limit < end) {
      // shrink until the token budget holds as well (token-dense text)
      let tokens = countTokensInRange(text, s, limit);
      while (tokens > maxTokens && limit - s > 20) {
        limit = s + Math.max(20, Math.floor(((limit - s) * maxTokens) / tokens));
        tokens = countTokensInRange(text, s, limit);
      }
    }
    if (limit >= end) {
      pieces.push([s, end]);
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
      // no space in the second half: cut between a word character and anything else, or hard as a last resort
      cut = limit;
      for (let p = limit; p > floor; p--) {
        if (!isWordChar(text.charCodeAt(p - 1)) || !isWordChar(text.charCodeAt(p))) {
          cut = p;
          break;
        }
      }
    }
    let e = cut;
    while (e > s && isSpace(text.charCodeAt(e - 1))) e--;
    if (e <= s) e = cut;
    pieces.push([s, e]);
    s = cut;
    while (s < end && isSpace(text.charCodeAt(s))) s++;
  }
  return pieces;
}

function buildUnits(
  text: string,
  sections: readonly Section[],
  segments: readonly Segment[],
  config: ChunkConfig,
): Unit[] {
  const units: Unit[] = [];
  let lastSection = -1;
  let prevEnd = 0;
  let section = 0;
  let headingLevel = -1;
  let firstInSegment = true;
  let sectionStart = false;
  const push = (ps: number, pe: number, weight: number, continuesWord: boolean) => {
    const gapFrom = Math.min(prevEnd, ps);
    let cleanGap = gapFrom < ps;
    for (let g = gapFrom; cleanGap && g < ps; g++) cleanGap = isSpace(text.charCodeAt(g));
    const gapTokens = gapFrom < ps ? tokenWeight(text, gapFrom, ps) : 0;
    prevEnd = pe;
    units.push({
      start: ps,
      end: pe,
      section,
      headingLevel,
      paragraphStart: firstInSegment,
      sectionStart: sectionStart && firstInSegment,
      continuesWord,
      tokens: gapTokens + weight,
      gapTokens,
      cleanGap,
    });
    firstInSegment = false;
  };
  for (const seg of segments) {
    section = seg.sectionIndex;
    sectionStart = seg.sectionIndex !== lastSection;
    lastSection = seg.sectionIndex;
    headingLevel = seg.type === 'heading' ? (sections[seg.sectionIndex]?.level ?? 1) : -1;
    firstInSegment = true;
    for (const s of seg.sentences) {
      const weight = s.weight ?? tokenWeight(text, s.start, s.end);
      if (s.end - s.start <= config.maxChars && weight <= config.targetTokens) {
        push(s.start, s.end, weight, false);
        continue;
      }
      const preferLines = seg.type === 'table' || seg.type === 'code';
      const pieces = splitOversized(text, s.start, s.end, config.maxChars, config.targetTokens, preferLines);
      for (let k = 0; k < pieces.length; k++) {
        const [ps, pe] = pieces[k] as [number, number];
        push(ps, pe, tokenWeight(text, ps, pe), k > 0);
      }
    }
  }
  return units;
}

/**
 * Groups of units that may share chunks: one per top-level section. Neighbouring groups merge only when
 * both are tiny (and fit together); a group under min_chars joins its neighbour regardless, since a
 * chunk of a few words ("§ 3 (weggefallen)") helps no search.
 */
function groupUnits(
  units: readonly Unit[],
  sections: readonly Section[],
  config: ChunkConfig,
): Array<[number, number]> {
  const raw: Array<[number, number]> = [];
  const topOf = new Int32Array(sections.length);
  for (let k = 0; k < sections.length; k++) topOf[k] = topLevelIndex(sections, k);
  let from = 0;
  let top = -2;
  for (let i = 0; i < units.length; i++) {
    const sec = (units[i] as Unit).section;
    const t = sec < topOf.length ? (topOf[sec] as number) : 0;
    if (t !== top) {
      if (i > from) raw.push([from, i]);
      from = i;
      top = t;
    }
  }
  if (units.length > from) raw.push([from, units.length]);
  const span = (g: [number, number]) => (units[g[1] - 1] as Unit).end - (units[g[0]] as Unit).start;
  const tiny = tinyChunkChars(config);
  const merged: Array<[number, number]> = [];
  for (const g of raw) {
    const prev = merged[merged.length - 1];
    if (
      prev &&
      span(prev) < tiny &&
      span(g) < tiny &&
      (units[g[1] - 1] as Unit).end - (units[prev[0]] as Unit).start <= config.maxChars
    ) {
      prev[1] = g[1];
    } else merged.push([g[0], g[1]]);
  }
  const out: Array<[number, number]> = [];
  for (let k = 0; k < merged.length; k++) {
    const g = merged[k] as [number, number];
    const prev = out[out.length - 1];
    if (span(g) < config.minChars && prev) prev[1] = g[1];
    else if (prev && span(prev) < config.minChars) prev[1] = g[1];
    else out.push([g[0], g[1]]);
  }
  return out;
}

/**
 * Bonus of the boundary after unit j (before unit j+1), or null when a cut there is not allowed because
 * it would leave a heading at the end of a chunk with its body in the next one.
 */
function boundaryBonus(units: readonly Unit[], j: number): number | null {
  const u = units[j] as Unit;
  const next = units[j + 1] as Unit;
  if (u.headingLevel >= 0 && !(next.headingLevel >= 0 && next.headingLevel <= u.headingLevel)) return null;
  if (next.continuesWord) return -0.5;
  if (next.sectionStart) return 0.3 + (next.headingLevel >= 0 && next.headingLevel <= 2 ? 0.1 : 0);
  if (next.paragraphStart) return 0.15;
  return 0;
}

/** Packs one group's units into chunk plans. */
function packGroup(
  units: readonly Unit[],
  from: number,
  to: number,
  config: ChunkConfig,
  prefixTokens: Float64Array,
  plans: Plan[],
): void {
  const maxChars = config.maxChars;
  const tiny = tinyChunkChars(config);
  const groupEnd = (units[to - 1] as Unit).end;
  const tokensOf = (a: number, b: number) =>
    (prefixTokens[b + 1] as number) - (prefixTokens[a] as number) - (units[a] as Unit).gapTokens;
  let first = from;
  let ov = from;
  while (first < to) {
    let cs = (units[ov] as Unit).start;
    // overlap must leave room for at least the first new unit
    if (
      ov < first &&
      ((units[first] as Unit).end - cs > maxChars || tokensOf(ov, first) > config.targetTokens)
    ) {
      ov = first;
      cs = (units[ov] as Unit).start;
    }
    let k = first;
    while (
      k + 1 < to &&
      (units[k + 1] as Unit).end - cs <= maxChars &&
      tokensOf(ov, k + 1) <= config.targetTokens
    )
      k++;
    if (k === to - 1) {
      plans.push({ first, last: k, overlapFirst: ov, cut: 'end' });
      return;
    }
    // choose the cut after unit j in [first, k]: fuller is better, paragraph and section ends earn a bonus,
    // a heading must not be left at the end, and a tiny remainder of the group must not be left over
    let best = -1;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let j = k; j >= first; j--) {
      const bonus = boundaryBonus(units, j);
      if (bonus === null) continue;
      const fill = ((units[j] as Unit).end - cs) / maxChars;
      const rest = groupEnd - (units[j + 1] as Unit).start;
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
    const next = units[best + 1] as Unit;
    const cut: ChunkCut = next.continuesWord
      ? 'word'
      : next.sectionStart
        ? 'section'
        : next.paragraphStart
          ? 'paragraph'
          : 'sentence';
    plans.push({ first, last: best, overlapFirst: ov, cut });
    // overlap: whole sentences from the end of this chunk, only when the next chunk continues the same
    // section; about overlapRatio of this chunk's length, the last sentence alone may run to twice that
    // so that long legal sentences still carry context
    let nextOv = best + 1;
    if (!next.sectionStart && !next.continuesWord && config.overlapRatio > 0) {
      const budget = config.overlapRatio * ((units[best] as Unit).end - cs);
      let m = best;
      while (m > first) {
        const u = units[m] as Unit;
        if (u.section !== next.section || u.headingLevel >= 0 || u.continuesWord) break;
        const len = (units[best] as Unit).end - u.start;
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
  sections: readonly Section[],
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
      drafts.push({
        index: drafts.length,
        content,
        start: at,
        end: at,
        tokenCount: countTokens(content),
        headingPath: [...(sections[Math.max(0, sectionAt(sections, at))]?.headingPath ?? [])],
        pageStart: page,
        pageEnd: page,
        sectionIndex: Math.max(0, sectionAt(sections, at)),
        metadata: {
          overlapChars: 0,
          cut: 'end',
          tokenizer: tokenizerName,
          lastSectionIndex: Math.max(0, sectionAt(sections, at)),
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
 * fall only between sentences, list items, blocks or sections (a sentence longer than a chunk is cut at a
 * word boundary, a table or code block at a line break), a heading is never the last thing in a chunk
 * when its body follows, chunks never span two top-level sections unless both are tiny, and a chunk that
 * continues a section starts with the last sentence(s) of the previous chunk (overlap). Every chunk
 * carries exact offsets, the heading path of the text it starts in, its page range and its token count.
 */
export function chunkDocument(doc: ChunkInput, opts: ChunkOptions = {}): ChunkDraft[] {
  const config: ChunkConfig = { ...defaultChunkConfig, ...opts.config };
  checkChunkConfig(config);
  const { text } = doc;
  const sections = opts.sections ?? buildSections(doc);
  const segments = opts.segments ?? segmentDocument(doc, sections);
  const units = buildUnits(text, sections, segments, config);
  const prefixTokens = new Float64Array(units.length + 1);
  for (let i = 0; i < units.length; i++)
    prefixTokens[i + 1] = (prefixTokens[i] as number) + (units[i] as Unit).tokens;

  const plans: Plan[] = [];
  for (const [from, to] of groupUnits(units, sections, config))
    packGroup(units, from, to, config, prefixTokens, plans);

  const drafts: ChunkDraft[] = [];
  let prevEnd = -1;
  for (const plan of plans) {
    const start = (units[plan.overlapFirst] as Unit).start;
    const end = (units[plan.last] as Unit).end;
    const content = text.slice(start, end);
    const section = (units[plan.overlapFirst] as Unit).section;
    // token count from the units' weights (one tokenizer pass for the whole document); pieces that were
    // not separated by white space could share a character run, so those chunks are counted afresh
    let clean = true;
    for (let u = plan.overlapFirst + 1; clean && u <= plan.last; u++) clean = (units[u] as Unit).cleanGap;
    const weight =
      (prefixTokens[plan.last + 1] as number) -
      (prefixTokens[plan.overlapFirst] as number) -
      (units[plan.overlapFirst] as Unit).gapTokens;
    drafts.push({
      index: drafts.length,
      content,
      start,
      end,
      tokenCount: clean ? Math.round(weight) : countTokens(content),
      headingPath: [...(sections[section]?.headingPath ?? [])],
      pageStart: pageAt(doc.pages, start),
      pageEnd: pageAt(doc.pages, Math.max(start, end - 1)),
      sectionIndex: section,
      metadata: {
        overlapChars: prevEnd > start ? prevEnd - start : 0,
        cut: plan.cut,
        tokenizer: tokenizerName,
        lastSectionIndex: (units[plan.last] as Unit).section,
      },
    });
    prevEnd = end;
  }
  if (opts.pageVisionText && opts.pageVisionText.size > 0)
    attachVision(drafts, text, doc, opts.pageVisionText, sections);
  return drafts;
}
