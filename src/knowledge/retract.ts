import type { SqlExecutor } from '../db/sql.js';
import { inLists } from '../db/statement-shapes.js';

/** Name of the vector collection that holds one point per entity. */
export const ENTITY_COLLECTION = 'entities';

export interface RetractResult {
  /** entities no document mentions any more, deleted */
  deletedEntities: number;
  /** their points in the `entities` collection (the caller removes them from the vector index) */
  deletedEntityPointIds: string[];
  /** taxonomy terms no document is filed under and no term hangs below, deleted */
  deletedTerms: number;
}

async function deleteByIds(db: SqlExecutor, table: string, ids: readonly number[]): Promise<void> {
  for (const list of inLists(ids))
    await db.run(`DELETE FROM ${table} WHERE id IN (${list.marks})`, list.values);
}

/**
 * On MariaDB/MySQL, a read that locks the rows it finds (FOR UPDATE): an entity or term found here as an orphan
 * stays one until the transaction ends, and one another document's transaction takes up (it locks what it reuses:
 * writeEntityMentions, ensureTermPath) is waited for and read again, mentioned. Without it, the orphan read and the delete by id had
 * another document's committed mention in between, and the delete took it with the entity (READ COMMITTED).
 * SQLite runs one write transaction at a time.
 */
export const lockingRead = (db: SqlExecutor): string => (db.dialect === 'mysql' ? ' FOR UPDATE' : '');

/**
 * Entities without any mention (their relations go with them, ON DELETE CASCADE). Selected first, then deleted
 * by id: MySQL cannot delete from a table its own subquery reads.
 */
export async function deleteOrphanEntities(db: SqlExecutor): Promise<{ count: number; pointIds: string[] }> {
  const rows = await db.query<{ id: number; qdrant_id: string | null }>(
    `SELECT e.id, e.qdrant_id FROM entities e
      WHERE NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)${lockingRead(db)}`,
  );
  await deleteByIds(
    db,
    'entities',
    rows.map((r) => Number(r.id)),
  );
  return {
    count: rows.length,
    pointIds: rows.map((r) => r.qdrant_id).filter((id): id is string => Boolean(id)),
  };
}

/** Taxonomy terms with no documents and no child terms, leaves first, until none is left. */
export async function deleteOrphanTerms(db: SqlExecutor): Promise<number> {
  let total = 0;
  for (;;) {
    const rows = await db.query<{ id: number }>(
      `SELECT t.id FROM taxonomy_terms t
        WHERE NOT EXISTS (SELECT 1 FROM document_taxonomy d WHERE d.term_id = t.id)
          AND NOT EXISTS (SELECT 1 FROM taxonomy_terms c WHERE c.parent_id = t.id)${lockingRead(db)}`,
    );
    if (rows.length === 0) return total;
    await deleteByIds(
      db,
      'taxonomy_terms',
      rows.map((r) => Number(r.id)),
    );
    total += rows.length;
  }
}

/**
 * Removes everything the LLM steps derived from one document version, in one transaction: mentions,
 * relations, taxonomy placement, chunk semantics, summary, questions, knowledge items, page vision results;
 * then entities and taxonomy terms nothing refers to any more. Idempotent. Entities other documents still
 * mention stay (with their mentions from those documents).
 */
export async function retractDocumentKnowledge(db: SqlExecutor, documentId: number): Promise<RetractResult> {
  return db.transaction(async (tx) => {
    await tx.run('DELETE FROM entity_relations WHERE document_id = ?', [documentId]);
    await tx.run('DELETE FROM entity_mentions WHERE document_id = ?', [documentId]);
    await tx.run('DELETE FROM document_taxonomy WHERE document_id = ?', [documentId]);
    await tx.run(
      'DELETE FROM chunk_semantics WHERE chunk_id IN (SELECT id FROM chunks WHERE document_id = ?)',
      [documentId],
    );
    await tx.run('DELETE FROM document_summaries WHERE document_id = ?', [documentId]);
    await tx.run('DELETE FROM generated_questions WHERE document_id = ?', [documentId]);
    await tx.run('DELETE FROM knowledge_items WHERE document_id = ?', [documentId]);
    await clearPageVision(tx, documentId);
    const entities = await deleteOrphanEntities(tx);
    const deletedTerms = await deleteOrphanTerms(tx);
    return { deletedEntities: entities.count, deletedEntityPointIds: entities.pointIds, deletedTerms };
  });
}

/** Drops `vision` from the metadata of the document's pages (the rest of the metadata is page_split's). */
export async function clearPageVision(db: SqlExecutor, documentId: number): Promise<void> {
  const pages = await db.query<{ id: number; metadata: string | null }>(
    'SELECT id, metadata FROM document_pages WHERE document_id = ? AND metadata IS NOT NULL',
    [documentId],
  );
  for (const page of pages) {
    let metadata: Record<string, unknown>;
    try {
      metadata = typeof page.metadata === 'string' ? JSON.parse(page.metadata) : (page.metadata ?? {});
    } catch {
      continue;
    }
    if (!metadata || typeof metadata !== 'object' || !('vision' in metadata)) continue;
    delete metadata.vision;
    await db.run('UPDATE document_pages SET metadata = ? WHERE id = ?', [JSON.stringify(metadata), page.id]);
  }
}
