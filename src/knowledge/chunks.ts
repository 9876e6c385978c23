import type { SqlExecutor } from '../db/sql.js';
import { parseJsonColumn } from '../util/json.js';

/** A chunk as the LLM steps read it. */
export interface ChunkRow {
  id: number;
  chunkIndex: number;
  content: string;
  tokenCount: number;
  headingPath: string[];
  pageStart: number | null;
  pageEnd: number | null;
  startOffset: number | null;
  endOffset: number | null;
}

export async function loadChunks(db: SqlExecutor, documentId: number): Promise<ChunkRow[]> {
  const rows = await db.query(
    `SELECT id, chunk_index, content, token_count, heading_path, page_start, page_end, start_offset, end_offset
       FROM chunks WHERE document_id = ? ORDER BY chunk_index`,
    [documentId],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    chunkIndex: Number(r.chunk_index),
    content: String(r.content),
    tokenCount: Number(r.token_count),
    headingPath: parseJsonColumn<string[]>(r.heading_path, []),
    pageStart: r.page_start === null ? null : Number(r.page_start),
    pageEnd: r.page_end === null ? null : Number(r.page_end),
    startOffset: r.start_offset === null ? null : Number(r.start_offset),
    endOffset: r.end_offset === null ? null : Number(r.end_offset),
  }));
}

export interface PageRow {
  id: number;
  pageNumber: number;
  content: string;
  metadata: Record<string, unknown>;
}

export async function loadPages(db: SqlExecutor, documentId: number): Promise<PageRow[]> {
  const rows = await db.query(
    'SELECT id, page_number, content, metadata FROM document_pages WHERE document_id = ? ORDER BY page_number',
    [documentId],
  );
  return rows.map((r) => ({
    id: Number(r.id),
    pageNumber: Number(r.page_number),
    content: String(r.content),
    metadata: parseJsonColumn<Record<string, unknown>>(r.metadata, {}),
  }));
}

export interface SectionRow {
  sectionIndex: number;
  parentIndex: number | null;
  level: number;
  heading: string;
  headingPath: string[];
  startOffset: number;
  endOffset: number;
}

export async function loadSections(db: SqlExecutor, documentId: number): Promise<SectionRow[]> {
  const rows = await db.query(
    `SELECT section_index, parent_index, level, heading, heading_path, start_offset, end_offset
       FROM document_sections WHERE document_id = ? ORDER BY section_index`,
    [documentId],
  );
  return rows.map((r) => ({
    sectionIndex: Number(r.section_index),
    parentIndex: r.parent_index === null ? null : Number(r.parent_index),
    level: Number(r.level),
    heading: String(r.heading),
    headingPath: parseJsonColumn<string[]>(r.heading_path, []),
    startOffset: Number(r.start_offset),
    endOffset: Number(r.end_offset),
  }));
}

/** The document's title, else its file name. */
export async function documentTitle(db: SqlExecutor, documentId: number): Promise<string> {
  const rows = await db.query<{ title: string | null; filename: string }>(
    'SELECT title, filename FROM documents WHERE id = ?',
    [documentId],
  );
  const row = rows[0];
  return row?.title?.trim() || row?.filename || `document ${documentId}`;
}

/** The chunks that cover a page (by page range; chunks without page numbers belong to no page). */
export function chunksOfPage(chunks: readonly ChunkRow[], page: number): ChunkRow[] {
  return chunks.filter(
    (c) => c.pageStart !== null && c.pageStart <= page && (c.pageEnd ?? c.pageStart) >= page,
  );
}

/** The chunks of a section: by offsets when both sides have them, else by heading-path prefix. */
export function chunksOfSection(chunks: readonly ChunkRow[], section: SectionRow): ChunkRow[] {
  const byOffset = chunks.filter(
    (c) =>
      c.startOffset !== null &&
      c.endOffset !== null &&
      c.startOffset < section.endOffset &&
      c.endOffset > section.startOffset,
  );
  if (byOffset.length > 0) return byOffset;
  const prefix = section.headingPath;
  return chunks.filter((c) => prefix.length > 0 && prefix.every((h, i) => c.headingPath[i] === h));
}

/** "Kapitel > Abschnitt", or a placeholder for text before the first heading. */
export const headingLabel = (path: readonly string[]): string =>
  path.length > 0 ? path.join(' > ') : '(ohne Überschrift)';

/** Material for the model, tagged so it can cite it: <source id="C12">...</source>. */
export function sourceBlock(id: string, text: string): string {
  return `<source id="${id}">\n${text}\n</source>`;
}
