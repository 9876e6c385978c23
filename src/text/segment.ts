import type { Block, ExtractedDocument } from '../extract/types.js';
import { isSpace } from './chars.js';
import { splitSentences, type TextSpan } from './sentences.js';
import { pageAt, type Section, sectionAt } from './structure.js';

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
  const longListItem = opts.longListItemChars ?? 300;
  const { text } = doc;
  const blocks = doc.blocks.length > 0 || text.trim() === '' ? doc.blocks : paragraphsOf(doc);
  const segments: Segment[] = [];
  let sec = 0;
  for (const b of blocks) {
    const span = trimmed(text, b.start, b.end);
    if (!span) continue;
    // blocks come in reading order, so the section index only moves forward; sectionAt covers odd input
    while (sec + 1 < sections.length && (sections[sec + 1] as Section).start <= span.start) sec++;
    const sectionIndex =
      sections.length === 0
        ? 0
        : (sections[sec] as Section).start <= span.start
          ? sec
          : Math.max(0, sectionAt(sections, span.start));
    const type = segmentType(b);
    let sentences: Array<TextSpan & { weight?: number }>;
    if (type === 'paragraph' || type === 'notes' || type === 'footnote' || type === 'caption') {
      sentences = splitSentences(text, span.start, span.end);
    } else if (type === 'list_item' && span.end - span.start > longListItem) {
      sentences = splitSentences(text, span.start, span.end);
    } else {
      sentences = [span];
    }
    if (sentences.length === 0) sentences = [span];
    segments.push({
      index: segments.length,
      sectionIndex,
      type,
      start: span.start,
      end: span.end,
      page: b.page,
      sentences,
    });
  }
  return segments;
}
