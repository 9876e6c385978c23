import { normalizeText, normalizeTitle } from './normalize.js';
import type { Block, BlockType, DocumentFormat, ExtractedDocument, PageInfo } from './types.js';

const SEPARATOR = '\n\n';

/**
 * Collects blocks in reading order and produces an ExtractedDocument with exact offsets. Every extractor
 * builds its result through this class, so offsets, normalisation and page ranges work the same everywhere.
 */
export class DocumentBuilder {
  private text = '';
  private readonly blocks: Block[] = [];
  private readonly pages: PageInfo[] = [];
  private current: PageInfo | undefined;
  private currentHasBlocks = false;
  readonly warnings: string[] = [];
  ocrNeeded = false;

  constructor(private readonly format: DocumentFormat) {}

  /** Starts page/slide `number` (1-based). Blocks added from now on belong to it. */
  startPage(number: number, metadata: Record<string, unknown> = {}): PageInfo {
    this.current = { number, start: this.text.length, end: this.text.length, metadata };
    this.pages.push(this.current);
    this.currentHasBlocks = false;
    return this.current;
  }

  get pageNumber(): number {
    return this.current?.number ?? 1;
  }

  /** Adds a block; the text is normalised and trimmed, empty blocks are dropped. Returns the block or undefined. */
  add(type: BlockType, raw: string, level?: number): Block | undefined {
    // code keeps its first line's indentation; everything else is trimmed
    const value =
      type === 'code' ? normalizeText(raw).replace(/^\n+/, '').trimEnd() : normalizeText(raw).trim();
    if (value.trim() === '') return undefined;
    if (!this.current) this.startPage(1);
    const page = this.current!;
    if (this.text.length > 0) this.text += SEPARATOR;
    const start = this.text.length;
    if (!this.currentHasBlocks) page.start = start;
    this.currentHasBlocks = true;
    this.text += value;
    const block: Block = { type, start, end: this.text.length, page: page.number };
    if (level !== undefined) block.level = level;
    this.blocks.push(block);
    page.end = this.text.length;
    return block;
  }

  build(metadata: Record<string, unknown> = {}): ExtractedDocument {
    // pages without blocks sit at the offset where they would have started
    let cursor = 0;
    for (const page of this.pages) {
      if (page.end === page.start) page.start = page.end = Math.max(cursor, page.start);
      cursor = page.end;
    }
    return {
      format: this.format,
      text: this.text,
      blocks: this.blocks,
      pages: this.pages,
      metadata: withNormalizedTitle(metadata),
      ocrNeeded: this.ocrNeeded,
      warnings: this.warnings,
    };
  }
}

/**
 * The metadata with its title normalised as the blocks' text is (NFC, no soft hyphen or invisible character, one
 * line): it is stored as the document's title and embedded before every chunk, so a title written in NFD or with
 * a soft hyphen ("Kündigungs\u00ADschutzgesetz" in front matter or core properties) must read as its text does.
 * A title that is nothing once normalised is none.
 */
function withNormalizedTitle(metadata: Record<string, unknown>): Record<string, unknown> {
  const title = metadata.title;
  if (typeof title !== 'string') return metadata;
  const normalized = normalizeTitle(title);
  if (normalized !== '') return { ...metadata, title: normalized };
  const { title: _none, ...rest } = metadata;
  return rest;
}
