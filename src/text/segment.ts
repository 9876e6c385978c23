import type { Block, ExtractedDocument } from '../extract/types.js';
import { codeUnits, isSpace } from './chars.js';
import { SentenceList, scanSentences, type TextSpan } from './sentences.js';
import { pageAt, type Section, SectionOutline } from './structure.js';

export type SegmentType =
  | 'paragraph'
  | 'list_item'
  | 'table'
  | 'code'
  | 'heading'
  | 'notes'
  | 'footnote'
  | 'caption';

/** A unit of the text inside a section: one block, with its sentences. */
export interface Segment {
  /** 0-based, in reading order */
  index: number;
  sectionIndex: number;
  type: SegmentType;
  start: number;
  end: number;
  /** 1-based page of the segment's start */
  page: number;
  /**
   * sentence spans (offsets into the document text); tables and code are a single span. `weight` is the
   * unrounded token weight (tokenizer.ts) when known; the chunker counts spans that lack it.
   */
  sentences: Array<TextSpan & { weight?: number }>;
}

export interface SegmentOptions {
  /** list items longer than this many characters are split into sentences; shorter ones are one. Default 300. */
  longListItemChars?: number;
}

export type SegmentInput = Pick<ExtractedDocument, 'text' | 'blocks' | 'pages'>;

function segmentType(b: Block): SegmentType {
  return b.type === 'title' ? 'heading' : b.type;
}

/** The span with surrounding white space removed, or null when nothing visible is left. */
function trimmed(text: string, start: number, end: number): TextSpan | null {
  let s = start;
  let e = end;
  while (s < e && isSpace(text.charCodeAt(s))) s++;
  while (e > s && isSpace(text.charCodeAt(e - 1))) e--;
  return s < e ? { start: s, end: e } : null;
}

/**
 * Paragraph blocks for text that came without blocks (a caller that only has a string): blank lines
 * separate paragraphs.
 */
function paragraphsOf(doc: SegmentInput): Block[] {
  const blocks: Block[] = [];
  const re = /\n[ \t]*\n/g;
  let from = 0;
  const push = (s: number, e: number) => {
    const span = trimmed(doc.text, s, e);
    if (span)
      blocks.push({
        type: 'paragraph',
        start: span.start,
        end: span.end,
        page: pageAt(doc.pages, span.start),
      });
  };
  for (let m = re.exec(doc.text); m !== null; m = re.exec(doc.text)) {
    push(from, m.index);
    from = m.index + m[0].length;
  }
  push(from, doc.text.length);
  return blocks;
}

/**
 * Receives the blocks of walkBlocks: trimmed offsets, the section, and whether the block is prose to split
 * into sentences. An object with a method rather than a callback, so callers can keep one visitor for all
 * documents (see UnitBuilder in chunk.ts on why that matters for speed).
 */
export interface BlockVisitor {
  block(
    type: SegmentType,
    start: number,
    end: number,
    sectionIndex: number,
    page: number,
    prose: boolean,
  ): void;
}

/**
 * The blocks a document is segmented into, in reading order: trimmed of white space (blank ones left
 * out), each assigned to the section (of `outline`) holding its start, and told whether it is prose to
 * split into sentences. `codes` are the code units of the text when the caller has them (chunkDocument).
 * Shared by segmentDocument and the chunker, which walks the blocks itself (no Segment objects).
 */
export function walkBlocks(
  doc: SegmentInput,
  outline: SectionOutline,
  opts: SegmentOptions,
  visit: BlockVisitor,
  codes?: Uint16Array,
): void {
  const longListItem = opts.longListItemChars ?? 300;
  const { text } = doc;
  const blocks = doc.blocks.length > 0 || text.trim() === '' ? doc.blocks : paragraphsOf(doc);
  const units = codes ?? codeUnits(text);
  const starts = outline.start;
  const count = outline.count;
  let sec = 0;
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i] as Block;
    let s = b.start;
    let e = Math.min(b.end, units.length);
    while (s < e && isSpace(units[s] as number)) s++;
    while (e > s && isSpace(units[e - 1] as number)) e--;
    if (s >= e) continue;
    // blocks come in reading order, so the section index only moves forward; sectionAt covers odd input
    while (sec + 1 < count && (starts[sec + 1] as number) <= s) sec++;
    const sectionIndex =
      count === 0 ? 0 : (starts[sec] as number) <= s ? sec : Math.max(0, outline.sectionAt(s));
    const type = segmentType(b);
    const prose =
      type === 'paragraph' ||
      type === 'notes' ||
      type === 'footnote' ||
      type === 'caption' ||
      (type === 'list_item' && e - s > longListItem);
    visit.block(type, s, e, sectionIndex, b.page, prose);
  }
}

/**
 * Splits a document into segments (one per block: paragraph, list item, table, code, heading, notes,
 * footnote, caption), each assigned to the section holding its start, and splits prose into sentences.
 * Tables and code are one unit each (a sentence splitter would cut them at every period); a list item is
 * one unit unless it is longer than `longListItemChars`.
 */
export function segmentDocument(
  doc: SegmentInput,
  sections: readonly Section[],
  opts: SegmentOptions = {},
): Segment[] {
  const codes = codeUnits(doc.text);
  const collector = new SegmentCollector(doc.text, codes);
  walkBlocks(doc, SectionOutline.fromSections(sections), opts, collector, codes);
  return collector.segments;
}

/** Builds Segment objects from walkBlocks, splitting prose into sentences. */
class SegmentCollector implements BlockVisitor {
  readonly segments: Segment[] = [];
  private readonly list = new SentenceList();

  constructor(
    private readonly text: string,
    private readonly codes: Uint16Array,
  ) {}

  block(
    type: SegmentType,
    start: number,
    end: number,
    sectionIndex: number,
    page: number,
    prose: boolean,
  ): void {
    let sentences: Array<TextSpan & { weight?: number }> = [];
    if (prose) {
      const { text, codes, list } = this;
      list.clear();
      scanSentences(text, codes, start, end, list);
      for (let k = 0; k < list.count; k++) {
        sentences.push({
          start: list.start[k] as number,
          end: list.end[k] as number,
          weight: (list.weight[k] as number) / 3,
        });
      }
    }
    if (sentences.length === 0) sentences = [{ start, end }];
    const { segments } = this;
    segments.push({ index: segments.length, sectionIndex, type, start, end, page, sentences });
  }
}
