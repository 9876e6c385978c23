/**
 * The shape every extractor returns. Offsets are UTF-16 code unit positions into `text`, so later steps
 * (structure, segment, chunk) can cut the normalised text without losing their place in the document.
 */
export type DocumentFormat = 'pdf' | 'docx' | 'pptx' | 'md' | 'txt';

export type BlockType =
  | 'title'
  | 'heading'
  | 'paragraph'
  | 'list_item'
  | 'table'
  | 'code'
  | 'notes'
  | 'footnote'
  | 'caption';

export interface Block {
  type: BlockType;
  /** start offset in ExtractedDocument.text (inclusive) */
  start: number;
  /** end offset in ExtractedDocument.text (exclusive) */
  end: number;
  /** 1-based page (PDF page, PPTX slide, logical page elsewhere) */
  page: number;
  /** heading level 1..6 for headings/titles; nesting depth (0-based) for list items */
  level?: number;
}

export interface PageInfo {
  /** 1-based */
  number: number;
  start: number;
  end: number;
  /** images, tables (for vision), ocrNeeded, slide title, notes, ... */
  metadata: Record<string, unknown>;
}

export interface ExtractedDocument {
  format: DocumentFormat;
  /** normalised text: blocks joined by "\n\n" */
  text: string;
  blocks: Block[];
  pages: PageInfo[];
  /** title, author, dates, front matter, headers/footers, outline, ... (JSON-serialisable) */
  metadata: Record<string, unknown>;
  /** true when a page has no text layer (scans): empty text is then not the whole truth */
  ocrNeeded: boolean;
  /** non-fatal oddities worth logging (recovered xref, skipped embedded object, ...) */
  warnings: string[];
}

export interface ExtractOptions {
  /** hard cap on pages/slides; more is a TOO_MANY_PAGES error */
  maxPages: number;
  /** hard cap on the input file size in bytes */
  maxFileBytes: number;
  /** cap on total inflated bytes of a ZIP container (DOCX/PPTX) */
  maxUnzippedBytes: number;
  /** cap on the compression ratio of one ZIP entry */
  maxCompressionRatio: number;
}

export const defaultExtractOptions: ExtractOptions = {
  maxPages: 5000,
  maxFileBytes: 200 * 1024 * 1024,
  maxUnzippedBytes: 500 * 1024 * 1024,
  maxCompressionRatio: 200,
};
