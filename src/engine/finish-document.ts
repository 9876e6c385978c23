import type { SqlExecutor } from '../db/sql.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';
import { completeDocument } from './documents.js';
import type { Providers } from './plugin.js';
import { retractDocument } from './retract.js';

export interface DocumentCounts {
  pages: number;
  sections: number;
  chunks: number;
  embedded_chunks: number;
  entities: number;
  knowledge_items: number;
}

/** What a document holds now, counted from SQL. */
export async function countDocument(db: SqlExecutor, documentId: number): Promise<DocumentCounts> {
  const one = async (sql: string) => Number((await db.query<{ n: number }>(sql, [documentId]))[0]?.n ?? 0);
  return {
    pages: await one('SELECT COUNT(*) AS n FROM document_pages WHERE document_id = ?'),
    sections: await one('SELECT COUNT(*) AS n FROM document_sections WHERE document_id = ?'),
    chunks: await one('SELECT COUNT(*) AS n FROM chunks WHERE document_id = ?'),
    embedded_chunks: await one("SELECT COUNT(*) AS n FROM chunks WHERE document_id = ? AND status = 'embedded'"),
    entities: await one('SELECT COUNT(DISTINCT entity_id) AS n FROM entity_mentions WHERE document_id = ?'),
    knowledge_items: await one('SELECT COUNT(*) AS n FROM knowledge_items WHERE document_id = ?'),
  };
}

/**
 * Completes a document version: counts onto the row, status done, latest; the versions it replaces are
 * retracted only now, after the new version's data (and points) exist.
 */
export async function finishDocument(db: SqlExecutor, providers: Providers, documentId: number): Promise<DocumentCounts> {
  const counts = await countDocument(db, documentId);
  const [row] = await db.query<{ metadata: string | null; page_count: number | null }>(
    'SELECT metadata, page_count FROM documents WHERE id = ?',
    [documentId],
  );
  const metadata = { ...parseJsonColumn<Record<string, unknown>>(row?.metadata, {}), counts };
  await db.run('UPDATE documents SET metadata = ?, page_count = COALESCE(page_count, ?), updated_at = ? WHERE id = ?', [
    JSON.stringify(metadata),
    counts.pages || null,
    sqlTime(),
    documentId,
  ]);
  for (const superseded of await completeDocument(db, documentId)) await retractDocument(db, providers, superseded);
  return counts;
}
