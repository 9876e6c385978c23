import type { SqlExecutor } from '../db/sql.js';
import type { StepContext } from '../engine/plugin.js';
import { renameFileError } from '../errors.js';
import { extractIsolated } from '../extract/isolate.js';
import type { ExtractedDocument, ExtractOptions } from '../extract/types.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';

const MEMO_KEY = 'extraction';

export interface ExtractionLimits extends Partial<ExtractOptions> {
  timeoutMs?: number;
  maxMemoryMb?: number;
}

/**
 * The document's extraction, once per document and run: from the memo, else from document_extracts (a resumed
 * run), else by extracting the archived bytes in an isolated worker (a hang or runaway memory becomes this
 * file's error). Errors name the source file, not the archive copy.
 */
export async function getExtraction(
  ctx: StepContext,
  limits: ExtractionLimits = {},
  fresh = false,
): Promise<ExtractedDocument> {
  const memo = ctx.memo.get(MEMO_KEY) as ExtractedDocument | undefined;
  if (memo) return memo;
  if (!fresh) {
    const stored = await loadExtraction(ctx.db, ctx.document.id);
    if (stored) {
      ctx.memo.set(MEMO_KEY, stored);
      return stored;
    }
  }
  try {
    const extracted = await extractIsolated(ctx.document.archivePath, limits);
    ctx.memo.set(MEMO_KEY, extracted);
    return extracted;
  } catch (error) {
    throw renameFileError(error, ctx.document.sourcePath);
  }
}

export async function loadExtraction(
  db: SqlExecutor,
  documentId: number,
): Promise<ExtractedDocument | undefined> {
  const [row] = await db.query<Record<string, any>>('SELECT * FROM document_extracts WHERE document_id = ?', [
    documentId,
  ]);
  if (!row) return undefined;
  return {
    format: row.format,
    text: row.text,
    blocks: parseJsonColumn(row.blocks, []),
    pages: parseJsonColumn(row.pages, []),
    metadata: parseJsonColumn(row.metadata, {}),
    ocrNeeded: Boolean(Number(row.ocr_needed)),
    warnings: [],
  };
}

/** Replaces the stored extraction of a document (one row, so the replacement is atomic). */
export async function saveExtraction(
  db: SqlExecutor,
  documentId: number,
  doc: ExtractedDocument,
): Promise<void> {
  const values = [
    documentId,
    doc.text,
    JSON.stringify(doc.blocks),
    JSON.stringify(doc.pages),
    JSON.stringify(doc.metadata),
    doc.format,
    doc.ocrNeeded ? 1 : 0,
    sqlTime(),
  ];
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM document_extracts WHERE document_id = ?', [documentId]);
    await tx.run(
      'INSERT INTO document_extracts (document_id, text, blocks, pages, metadata, format, ocr_needed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      values,
    );
  });
}

/** Replaces the document's pages: text per page and page metadata (images, tables, ocr_needed, slide title). */
export async function savePages(
  db: SqlExecutor,
  documentId: number,
  doc: ExtractedDocument,
): Promise<number> {
  const now = sqlTime();
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM document_pages WHERE document_id = ?', [documentId]);
    for (let i = 0; i < doc.pages.length; i += 200) {
      const slice = doc.pages.slice(i, i + 200);
      await tx.run(
        `INSERT INTO document_pages (document_id, page_number, content, metadata, created_at) VALUES ${slice.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
        slice.flatMap((page) => [
          documentId,
          page.number,
          doc.text.slice(page.start, page.end),
          JSON.stringify(page.metadata),
          now,
        ]),
      );
    }
  });
  return doc.pages.length;
}

/** Vision descriptions stored on pages (document_pages.metadata.vision), by page number. */
export async function loadPageVision(db: SqlExecutor, documentId: number): Promise<Map<number, string>> {
  const rows = await db.query<{ page_number: number; metadata: string | null }>(
    'SELECT page_number, metadata FROM document_pages WHERE document_id = ?',
    [documentId],
  );
  const vision = new Map<number, string>();
  for (const row of rows) {
    const meta = parseJsonColumn<Record<string, unknown>>(row.metadata, {});
    const text =
      typeof meta.vision === 'string'
        ? meta.vision
        : (meta.vision as { description?: string } | undefined)?.description;
    if (text) vision.set(Number(row.page_number), text);
  }
  return vision;
}
