import type { Block, ExtractedDocument, PageInfo } from '../extract/types.js';

/** One node of the heading tree (a row of `document_sections`). */
export interface Section {
  /** 0-based, in reading order */
  index: number;
  /** 0 = document title (or the untitled preamble), 1..6 = heading levels */
  level: number;
  /** heading text ('' for the preamble before the first heading) */
  heading: string;
  /**
   * headings from the top down to this one, the document title left out (see buildSections); the title
   * section itself has [title], the untitled preamble []
   */
  headingPath: string[];
  /** offset of the heading (or the preamble's first character) in the extracted text */
  start: number;
  /** end of the section's own text: where the next section (of any level) starts, or the end of the text */
  end: number;
  pageStart: number;
  pageEnd: number;
  parentIndex: number | null;
}

export interface StructureOptions {
  /**
   * A document without a 'title' block whose first heading is its only level-1 heading (a Markdown file
   * with one "# Name" on top, a law, a handbook chapter) gets that heading as its title. Default true.
   */
  singleH1AsTitle?: boolean;
}

export type StructureInput = Pick<ExtractedDocument, 'text' | 'blocks' | 'pages'>;

/** The 1-based page holding `offset`; pages are sorted by start. Falls back to 1 without pages. */
export function pageAt(pages: readonly PageInfo[], offset: number): number {
  if (pages.length === 0) return 1;
  let lo = 0;
  let hi = pages.length - 1;
  let found = 0;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((pages[mid] as PageInfo).start <= offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  // an empty page sitting at the same offset as the next text belongs before it; take the last page that
  // starts at or before the offset and actually reaches it
  let k = found;
  while (
    k > 0 &&
    (pages[k] as PageInfo).start === (pages[k] as PageInfo).end &&
    (pages[k] as PageInfo).start === offset
  )
    k--;
  return (pages[k] as PageInfo).number;
}

/** JavaScript's `\s`: white space and line terminators (what String.prototype.trim removes). */
function isJsSpace(c: number): boolean {
  if (c < 128) return c === 32 || (c >= 9 && c <= 13);
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** Heading text on one line, white space collapsed. */
function headingText(text: string, b: Block): string {
  // collapse only when needed: a run of white space, a tab, line break or no-break space, or white
  // space at either end (a character test instead of a regex: documents have thousands of headings)
  const { start, end } = b;
  let messy = false;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c > 32 && c < 0xa0) continue; // visible ASCII, nearly every character of a heading
    if (!isJsSpace(c)) continue;
    const tabOrBreak = c === 9 || c === 10 || c === 13 || c === 0xa0;
    if (tabOrBreak || i === start || i === end - 1 || isJsSpace(text.charCodeAt(i - 1))) {
      messy = true;
      break;
    }
    // a single space between words; a second white-space character after it is caught there
  }
  const raw = text.slice(start, end);
  return messy ? raw.replace(/\s+/g, ' ').trim() : raw;
}

/**
 * Builds the heading tree of a document from its 'title' and 'heading' blocks.
 *
 * Decisions:
 * - 'title' blocks are level 0; 'heading' blocks use their level (1..6, default 1). With
 *   `singleH1AsTitle`, a lone first-level heading on top acts as the title (level 0).
 * - Text before the first heading is a preamble section: level 0, heading '', headingPath [].
 * - headingPath leaves the document title out: the title is stored on the document and sent with every
 *   vector payload, and repeating it in every path adds noise to embeddings and prompts. The title's own
 *   section (text right under the title) has headingPath [title], so that text is not nameless.
 * - A heading's parent is the nearest earlier heading of a lower level number; skipped levels (an h2
 *   followed by an h4) simply nest.
 */
export function buildSections(doc: StructureInput, opts: StructureOptions = {}): Section[] {
  // three passes in three functions: a long loop followed by more code in one function gets compiled
  // on the fly (on-stack replacement) without type feedback for the code after it, and that code then
  // bails out to the interpreter on every call (a tenth of the chunker's time on a law with 3000 headings)
  const headings = headingBlocks(doc.blocks, opts.singleH1AsTitle ?? true);
  const sections = headingTree(doc, headings);
  closeSections(doc, sections);
  return sections;
}

/** The title and heading blocks with their levels (0 for a title, or for a lone h1 on top taken as one). */
function headingBlocks(
  blocks: readonly Block[],
  singleH1AsTitle: boolean,
): { blocks: Block[]; levels: number[] } {
  const headings: Block[] = [];
  const levels: number[] = [];
  let hasTitle = false;
  let h1s = 0;
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i] as Block;
    if (b.type === 'title') {
      hasTitle = true;
      headings.push(b);
      levels.push(0);
    } else if (b.type === 'heading') {
      const level = Math.max(1, Math.min(6, b.level ?? 1));
      if (level === 1) h1s++;
      headings.push(b);
      levels.push(level);
    }
  }
  if (singleH1AsTitle && headings.length > 0 && !hasTitle && levels[0] === 1 && h1s === 1) levels[0] = 0;
  return { blocks: headings, levels };
}

/** The sections in reading order: the preamble, if any, then one per heading, nested by level. */
function headingTree(doc: StructureInput, headings: { blocks: Block[]; levels: number[] }): Section[] {
  const { text, pages } = doc;
  const { blocks, levels } = headings;
  const sections: Section[] = [];
  let firstVisible = 0;
  while (firstVisible < text.length && isJsSpace(text.charCodeAt(firstVisible))) firstVisible++;
  const firstHeadingStart = blocks.length > 0 ? (blocks[0] as Block).start : text.length;
  if (firstVisible < text.length && firstVisible < firstHeadingStart) {
    sections.push({
      index: 0,
      level: 0,
      heading: '',
      headingPath: [],
      start: firstVisible,
      end: firstHeadingStart,
      pageStart: pageAt(pages, firstVisible),
      pageEnd: pageAt(pages, firstVisible),
      parentIndex: null,
    });
  }
  // stack of open sections (by index) with strictly increasing levels
  const stack: Section[] = [];
  for (let h = 0; h < blocks.length; h++) {
    const b = blocks[h] as Block;
    const level = levels[h] as number;
    while (stack.length > 0 && (stack[stack.length - 1] as Section).level >= level) stack.pop();
    const parent = stack.length > 0 ? (stack[stack.length - 1] as Section) : null;
    const heading = headingText(text, b);
    let headingPath: string[];
    if (level === 0) headingPath = heading === '' ? [] : [heading];
    else headingPath = parent && parent.level > 0 ? [...parent.headingPath, heading] : [heading];
    const section: Section = {
      index: sections.length,
      level,
      heading,
      headingPath,
      start: b.start,
      end: text.length,
      pageStart: b.page,
      pageEnd: b.page,
      parentIndex: parent ? parent.index : null,
    };
    sections.push(section);
    stack.push(section);
  }
  return sections;
}

/** Sets where each section's own text ends (the next section's start) and the page it ends on. */
function closeSections(doc: StructureInput, sections: Section[]): void {
  const { text, pages } = doc;
  const n = sections.length;
  for (let i = 0; i + 1 < n; i++) (sections[i] as Section).end = (sections[i + 1] as Section).start;
  if (pages.length <= 1) {
    const only = pages.length === 0 ? 1 : (pages[0] as PageInfo).number;
    for (let i = 0; i < n; i++) {
      const s = sections[i] as Section;
      s.pageEnd = Math.max(s.pageStart, only);
    }
    return;
  }
  for (let i = 0; i < n; i++) {
    const s = sections[i] as Section;
    // the page of the last visible character of the section's own text
    let e = s.end;
    while (e > s.start && isJsSpace(text.charCodeAt(e - 1))) e--;
    s.pageEnd = Math.max(s.pageStart, pageAt(pages, Math.max(s.start, e - 1)));
  }
}

/** Index of the section holding `offset` (sections sorted by start); -1 before the first one. */
export function sectionAt(sections: readonly Section[], offset: number): number {
  let lo = 0;
  let hi = sections.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((sections[mid] as Section).start <= offset) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/** Index of the top-level section a section belongs to: its ancestor just below the title, or itself. */
export function topLevelIndex(sections: readonly Section[], index: number): number {
  let s = sections[index] as Section;
  while (s.parentIndex !== null) {
    const parent = sections[s.parentIndex] as Section;
    if (parent.level === 0) break;
    s = parent;
  }
  return s.index;
}
