import type { Block, ExtractedDocument, PageInfo } from '../extract/types.js';
import { cutText } from './cut.js';

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

/** 1 for JavaScript white space (isJsSpace), 3 for a tab, line break or no-break space. */
const JS_SPACE: Uint8Array = (() => {
  const table = new Uint8Array(65536);
  for (let c = 0; c < 65536; c++) {
    if (isJsSpace(c)) table[c] = c === 9 || c === 10 || c === 13 || c === 0xa0 ? 3 : 1;
  }
  return table;
})();

/** The longest heading kept (characters): longer ones are cut, marked "…". */
const MAX_HEADING_CHARS = 1000;

/** Heading text on one line, white space collapsed. */
function headingText(text: string, b: Block): string {
  // collapse only when needed: a run of white space, a tab, line break or no-break space, or white
  // space at either end. A table read per character and no branch (a branch at every space between
  // words mispredicts, and documents have thousands of headings)
  const { start, end } = b;
  let messy = 0;
  let prev = 1; // as if white space came before: white space at the start is messy
  for (let i = start; i < end; i++) {
    const k = JS_SPACE[text.charCodeAt(i)] as number;
    messy |= (k & 2) | (k & prev);
    prev = k;
  }
  messy |= prev; // white space at the end
  const raw = text.slice(start, end);
  const line = messy !== 0 ? raw.replace(/\s+/g, ' ').trim() : raw;
  // a heading of thousands of characters (a paragraph mistaken for one) is cut: it is stored in every section's
  // path and in every chunk's heading path (MariaDB's TEXT column holds 64 KB)
  return line.length > MAX_HEADING_CHARS ? `${cutText(line, MAX_HEADING_CHARS - 1)}…` : line;
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
  // separate passes in separate functions: a long loop followed by more code in one function gets
  // compiled on the fly (on-stack replacement) without type feedback for the code after it, and that code
  // then bails out to the interpreter on every call (a tenth of the chunker's time on a law with 3000
  // headings)
  const outline = SectionOutline.of(doc, opts);
  const sections = sectionObjects(doc, outline);
  closeSections(doc, sections);
  return sections;
}

/**
 * The heading tree as parallel arrays, with heading texts and paths made only when asked for: the
 * chunker needs the tree for every section but the path only for the sections its chunks start in, and
 * heading texts and Section objects for all sections were a tenth of its time. Built from the document
 * (SectionOutline.of, what buildSections materializes) or from sections made earlier (fromSections).
 */
export class SectionOutline {
  count = 0;
  start: Int32Array;
  /** 0 = title or preamble, 1..6 = heading levels */
  level: Int8Array;
  /** parent section, -1 for none */
  parent: Int32Array;
  private readonly text: string;
  /** the heading blocks, one per section after the preamble (if any) */
  private readonly blocks: readonly Block[];
  /** 1 when the first section is a preamble (it has no heading block), else 0 */
  private readonly preamble: number;
  /** heading texts and paths made so far, or given (fromSections) */
  private readonly headings: Array<string | undefined>;
  private readonly paths: Array<string[] | undefined>;
  private readonly sections: readonly Section[] | null;

  private constructor(
    text: string,
    blocks: readonly Block[],
    preamble: number,
    size: number,
    sections: readonly Section[] | null,
  ) {
    this.text = text;
    this.blocks = blocks;
    this.preamble = preamble;
    this.start = new Int32Array(size);
    this.level = new Int8Array(size);
    this.parent = new Int32Array(size);
    this.headings = new Array(size);
    this.paths = new Array(size);
    this.sections = sections;
  }

  /** The outline of a document (the sections buildSections returns, without texts and pages). */
  static of(doc: StructureInput, opts: StructureOptions = {}): SectionOutline {
    const headings = headingBlocks(doc.blocks, opts.singleH1AsTitle ?? true);
    const { text } = doc;
    let firstVisible = 0;
    while (firstVisible < text.length && isJsSpace(text.charCodeAt(firstVisible))) firstVisible++;
    const firstHeadingStart = headings.blocks.length > 0 ? (headings.blocks[0] as Block).start : text.length;
    const preamble = firstVisible < text.length && firstVisible < firstHeadingStart;
    const size = headings.blocks.length + (preamble ? 1 : 0);
    const outline = new SectionOutline(text, headings.blocks, preamble ? 1 : 0, size, null);
    if (preamble) {
      outline.start[0] = firstVisible;
      outline.parent[0] = -1;
      outline.headings[0] = '';
      outline.paths[0] = [];
      outline.count = 1;
    }
    outline.nest(headings);
    return outline;
  }

  /** The outline of sections made earlier (by buildSections, or read back from the database). */
  static fromSections(sections: readonly Section[]): SectionOutline {
    const outline = new SectionOutline('', [], 0, sections.length, sections);
    for (let k = 0; k < sections.length; k++) {
      const s = sections[k] as Section;
      outline.start[k] = s.start;
      outline.level[k] = s.level;
      outline.parent[k] = s.parentIndex ?? -1;
    }
    outline.count = sections.length;
    return outline;
  }

  /** Appends the heading sections, nested by level. */
  private nest(headings: { blocks: Block[]; levels: number[] }): void {
    const { blocks, levels } = headings;
    // stack of open sections (by index) with strictly increasing levels
    const stack: number[] = [];
    for (let h = 0; h < blocks.length; h++) {
      const b = blocks[h] as Block;
      const level = levels[h] as number;
      while (stack.length > 0 && (this.level[stack[stack.length - 1] as number] as number) >= level)
        stack.pop();
      const k = this.count++;
      this.start[k] = b.start;
      this.level[k] = level;
      this.parent[k] = stack.length > 0 ? (stack[stack.length - 1] as number) : -1;
      stack.push(k);
    }
  }

  /** The heading block of section k (null for the preamble and for sections made earlier). */
  blockOf(k: number): Block | null {
    return this.blocks[k - this.preamble] ?? null;
  }

  /** Heading text of section k ('' for the preamble). */
  heading(k: number): string {
    if (this.sections) return (this.sections[k] as Section).heading;
    let heading = this.headings[k];
    if (heading === undefined) {
      heading = headingText(this.text, this.blocks[k - this.preamble] as Block);
      this.headings[k] = heading;
    }
    return heading;
  }

  /** Heading path of section k (see buildSections). The array is the outline's own: copy it to keep it. */
  headingPath(k: number): string[] {
    if (this.sections) return (this.sections[k] as Section).headingPath;
    let path = this.paths[k];
    if (path === undefined) {
      const heading = this.heading(k);
      const level = this.level[k] as number;
      const parent = this.parent[k] as number;
      if (level === 0) path = heading === '' ? [] : [heading];
      else if (parent >= 0 && (this.level[parent] as number) > 0)
        path = [...this.headingPath(parent), heading];
      else path = [heading];
      this.paths[k] = path;
    }
    return path;
  }

  /** Index of the section holding `offset`; -1 before the first one (sectionAt). */
  sectionAt(offset: number): number {
    let lo = 0;
    let hi = this.count - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if ((this.start[mid] as number) <= offset) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** The top-level section of every section (topLevelIndex). */
  topLevels(): Int32Array {
    const top = new Int32Array(this.count);
    const sections = this.sections;
    for (let k = 0; k < this.count; k++) {
      if (sections) top[k] = topLevelIndex(sections, k);
      else {
        const p = this.parent[k] as number;
        top[k] = p < 0 || this.level[p] === 0 ? k : (top[p] as number);
      }
    }
    return top;
  }
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

/** The Section objects of an outline, their ends and last pages still open (closeSections). */
function sectionObjects(doc: StructureInput, outline: SectionOutline): Section[] {
  const { text, pages } = doc;
  const sections: Section[] = [];
  for (let k = 0; k < outline.count; k++) {
    const start = outline.start[k] as number;
    const parent = outline.parent[k] as number;
    const block = outline.blockOf(k);
    const page = block ? block.page : pageAt(pages, start);
    sections.push({
      index: k,
      level: outline.level[k] as number,
      heading: outline.heading(k),
      headingPath: outline.headingPath(k),
      start,
      end: block ? text.length : k + 1 < outline.count ? (outline.start[k + 1] as number) : text.length,
      pageStart: page,
      pageEnd: page,
      parentIndex: parent < 0 ? null : parent,
    });
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
