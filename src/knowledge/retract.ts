import { comparedName, foldName } from '../db/collation.js';
import type { SqlExecutor } from '../db/sql.js';
import { inLists } from '../db/statement-shapes.js';
import { byCodeUnits } from '../util/compare.js';

/** Name of the vector collection that holds one point per entity. */
export const ENTITY_COLLECTION = 'entities';

export interface RetractResult {
  /** entities no document mentions any more, deleted */
  deletedEntities: number;
  /**
   * points to remove from the `entities` collection (the caller does): of the deleted entities, and of entities
   * whose name or description changed with the mentions they lost
   */
  deletedEntityPointIds: string[];
  /** entities whose name or description changed and that had a point: to be embedded again (embedEntitiesAgain) */
  changedEntityIds: number[];
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

/** Lists of names compared name by name (a list before the longer ones it begins). */
function compareNameLists(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const order = byCodeUnits(a[i]!, b[i]!);
    if (order !== 0) return order;
  }
  return a.length - b.length;
}

/**
 * Sorts items into the one order in which every transaction locks the rows they stand for, each item by the list
 * of names `key` gives. Two documents that share entities (or terms) and locked them in the order their answers
 * named them each held a row the other waited for: MariaDB rolled one back as a deadlock, and a document whose
 * five tries all met one failed. Locked in one order, the later transaction waits for the earlier one instead.
 */
export function inLockOrder<T>(items: readonly T[], key: (item: T) => readonly string[]): T[] {
  return items
    .map((item) => ({ item, names: key(item) }))
    .sort((a, b) => compareNameLists(a.names, b.names))
    .map(({ item }) => item);
}

/** An entity's place in the lock order: by type, then by name as the unique key compares it. */
export function entityLockKey(
  db: Pick<SqlExecutor, 'dialect'>,
): (entity: { type: string; normalized: string }) => string[] {
  const compared = comparedName(db);
  return (entity) => [entity.type, compared(entity.normalized), entity.normalized];
}

/** A term's place in the lock order: its path's names folded, so that a term comes before the terms below it. */
export const termLockKey = (names: readonly string[]): string[] => names.map(foldName);

/** An entity a document mentions, as the lock order knows it. */
export interface MentionedEntity {
  id: number;
  type: string;
  normalized: string;
}

/** The entities the document's mentions name (read without locks: the caller locks them in lock order). */
export async function mentionedEntities(db: SqlExecutor, documentId: number): Promise<MentionedEntity[]> {
  const rows = await db.query<{ id: number; type: string; normalized_name: string }>(
    `SELECT DISTINCT e.id, e.type, e.normalized_name FROM entity_mentions m JOIN entities e ON e.id = m.entity_id
      WHERE m.document_id = ?`,
    [documentId],
  );
  return rows.map((r) => ({ id: Number(r.id), type: r.type, normalized: r.normalized_name }));
}

/**
 * Locks an entity row (MariaDB/MySQL; SQLite runs one write transaction at a time). An entity is locked before
 * any of its mentions is written or deleted, and in lock order (inLockOrder with entityLockKey).
 */
export async function lockEntity(db: SqlExecutor, id: number): Promise<void> {
  if (db.dialect === 'mysql') await db.query(`SELECT id FROM entities WHERE id = ?${lockingRead(db)}`, [id]);
}

/** What became of entities that lost mentions (settleEntities). */
export interface SettledEntities {
  deleted: number;
  /** points of the deleted entities, and the outdated points of the changed ones */
  pointIds: string[];
  /** entities whose name or description changed and that had a point */
  changedIds: number[];
}

/**
 * Entities that lost mentions (`ids`, locked by the caller): those no document mentions any more are deleted
 * (their relations go with them, ON DELETE CASCADE), the others take name and description from the mentions that
 * remain (refreshEntities). Only these are checked: a scan of every entity for orphans locked rows other
 * documents' transactions held, in whatever order it met them (a deadlock).
 */
export async function settleEntities(db: SqlExecutor, ids: readonly number[]): Promise<SettledEntities> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return { deleted: 0, pointIds: [], changedIds: [] };
  const orphans: Array<{ id: number; qdrant_id: string | null }> = [];
  // selected first, then deleted by id: MySQL cannot delete from a table its own subquery reads
  for (const list of inLists(unique)) {
    orphans.push(
      ...(await db.query<{ id: number; qdrant_id: string | null }>(
        `SELECT e.id, e.qdrant_id FROM entities e
          WHERE e.id IN (${list.marks})
            AND NOT EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id)${lockingRead(db)}`,
        list.values,
      )),
    );
  }
  const orphanIds = new Set(orphans.map((r) => Number(r.id)));
  await deleteByIds(db, 'entities', [...orphanIds]);
  const changed = await refreshEntities(
    db,
    unique.filter((id) => !orphanIds.has(id)),
  );
  return {
    deleted: orphanIds.size,
    pointIds: [...orphans.map((r) => r.qdrant_id), ...changed.pointIds].filter((id): id is string =>
      Boolean(id),
    ),
    changedIds: changed.ids,
  };
}

interface RemainingMentions {
  id: number;
  name: string;
  description: string | null;
  qdrant_id: string | null;
  first_name: string | null;
  first_description: string | null;
  unrecorded: number;
}

/**
 * Name and description of entities that lost mentions, as the mentions that remain give them, the way
 * writeEntityMentions keeps them: the oldest mention's spelling, the first description a mention gave. A mention
 * written before migration 0010 recorded no description: an entity such a mention still backs keeps its own
 * description unless another remaining mention gives one. An entity that changes loses its point (qdrant_id
 * cleared): the vector described the old name and description. Returns those that had a point, and the points.
 */
async function refreshEntities(
  db: SqlExecutor,
  ids: readonly number[],
): Promise<{ ids: number[]; pointIds: string[] }> {
  const changed = { ids: [] as number[], pointIds: [] as string[] };
  for (const list of inLists(ids)) {
    const rows = await db.query<RemainingMentions>(
      `SELECT e.id, e.name, e.description, e.qdrant_id,
         (SELECT m.mention_text FROM entity_mentions m WHERE m.entity_id = e.id ORDER BY m.id LIMIT 1) AS first_name,
         (SELECT m.description FROM entity_mentions m WHERE m.entity_id = e.id AND m.description <> ''
           ORDER BY m.id LIMIT 1) AS first_description,
         EXISTS (SELECT 1 FROM entity_mentions m WHERE m.entity_id = e.id AND m.description IS NULL) AS unrecorded
       FROM entities e WHERE e.id IN (${list.marks})`,
      list.values,
    );
    for (const row of rows) {
      const name = row.first_name ?? row.name;
      const description =
        row.first_description ?? (Number(row.unrecorded) > 0 ? row.description || null : null);
      if (name === row.name && description === (row.description || null)) continue;
      await db.run('UPDATE entities SET name = ?, description = ?, qdrant_id = NULL WHERE id = ?', [
        name,
        description,
        row.id,
      ]);
      if (row.qdrant_id) {
        changed.ids.push(Number(row.id));
        changed.pointIds.push(row.qdrant_id);
      }
    }
  }
  return changed;
}

/** A taxonomy term a document is filed under. */
export interface PlacedTerm {
  id: number;
  path: string;
}

/** The terms the document is filed under (read without locks: the caller locks their paths in lock order). */
export async function placedTerms(db: SqlExecutor, documentId: number): Promise<PlacedTerm[]> {
  const rows = await db.query<PlacedTerm>(
    `SELECT t.id, t.path FROM document_taxonomy d JOIN taxonomy_terms t ON t.id = d.term_id
      WHERE d.document_id = ?`,
    [documentId],
  );
  return rows.map((r) => ({ id: Number(r.id), path: r.path }));
}

/** Separates the names of a term's path (taxonomy.ts's PATH_SEPARATOR; names hold no '>'). */
export const TERM_PATH_SEPARATOR = ' > ';

/**
 * Locks the terms of a path, root first (MariaDB/MySQL): a term found an orphan below must not be taken up by
 * another document meanwhile, nor must its parent. Called in lock order (inLockOrder with termLockKey).
 */
export async function lockTermPath(db: SqlExecutor, path: string): Promise<void> {
  if (db.dialect !== 'mysql') return;
  const names = path.split(TERM_PATH_SEPARATOR);
  for (let depth = 1; depth <= names.length; depth++) {
    await db.query(`SELECT id FROM taxonomy_terms WHERE path = ?${lockingRead(db)}`, [
      names.slice(0, depth).join(TERM_PATH_SEPARATOR),
    ]);
  }
}

/**
 * Of the terms a document was filed under (`ids`, their paths locked by the caller), those with no documents and
 * no child terms are deleted, then their parents left so, leaves first. Returns how many.
 */
export async function deleteOrphanTerms(db: SqlExecutor, ids: readonly number[]): Promise<number> {
  let total = 0;
  let candidates = [...new Set(ids)];
  while (candidates.length > 0) {
    const rows: Array<{ id: number; parent_id: number | null }> = [];
    for (const list of inLists(candidates)) {
      rows.push(
        ...(await db.query<{ id: number; parent_id: number | null }>(
          `SELECT t.id, t.parent_id FROM taxonomy_terms t
            WHERE t.id IN (${list.marks})
              AND NOT EXISTS (SELECT 1 FROM document_taxonomy d WHERE d.term_id = t.id)
              AND NOT EXISTS (SELECT 1 FROM taxonomy_terms c WHERE c.parent_id = t.id)${lockingRead(db)}`,
          list.values,
        )),
      );
    }
    await deleteByIds(
      db,
      'taxonomy_terms',
      rows.map((r) => Number(r.id)),
    );
    total += rows.length;
    candidates = [...new Set(rows.filter((r) => r.parent_id !== null).map((r) => Number(r.parent_id)))];
  }
  return total;
}

/**
 * Removes everything the LLM steps derived from one document version, in one transaction: mentions,
 * relations, taxonomy placement, chunk semantics, summary, questions, knowledge items, page vision results;
 * then entities and taxonomy terms nothing refers to any more. Idempotent. Entities other documents still
 * mention stay (with their mentions from those documents), named and described by those mentions.
 */
export async function retractDocumentKnowledge(db: SqlExecutor, documentId: number): Promise<RetractResult> {
  return db.transaction(async (tx) => {
    const entities = await mentionedEntities(tx, documentId);
    const terms = await placedTerms(tx, documentId);
    // locked before their mentions and placements go, in the order every writer locks them
    for (const entity of inLockOrder(entities, entityLockKey(tx))) await lockEntity(tx, entity.id);
    for (const term of inLockOrder(terms, (t) => termLockKey(t.path.split(TERM_PATH_SEPARATOR))))
      await lockTermPath(tx, term.path);
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
    const settled = await settleEntities(
      tx,
      entities.map((e) => e.id),
    );
    const deletedTerms = await deleteOrphanTerms(
      tx,
      terms.map((t) => t.id),
    );
    return {
      deletedEntities: settled.deleted,
      deletedEntityPointIds: settled.pointIds,
      changedEntityIds: settled.changedIds,
      deletedTerms,
    };
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
