import type { SqlExecutor } from '../db/sql.js';
import { CpeError, describeError, ErrorCodes, isRetryable } from '../errors.js';
import { ENTITY_COLLECTION, retractDocumentKnowledge } from '../knowledge/retract.js';
import type { Providers } from './plugin.js';

/** Collections that may hold no stamp (points stored before stamps, or by the original system) but chunk points. */
const CHUNK_COLLECTIONS = ['documents', 'mail'];

/**
 * The collections that may hold a document's chunk points: the ones named above and every collection cpe stamped
 * in this index (vector_collections: a pipeline may send its points to any collection it names), except the
 * entities'. Collections cpe did not make are left alone.
 */
async function chunkCollections(db: SqlExecutor, backend: 'embedded' | 'qdrant'): Promise<string[]> {
  const stamped = await db.query<{ name: string }>('SELECT name FROM vector_collections WHERE backend = ?', [
    backend,
  ]);
  return [...new Set([...CHUNK_COLLECTIONS, ...stamped.map((r) => r.name)])].filter((n) => n !== 'entities');
}

/**
 * An SQL condition on a documents row aliased `d`: the version still has what retraction takes away (its chunks,
 * its extraction), so a retraction that failed before (the vector index was down) is still to be done.
 */
export const HAS_DERIVED_ROWS = `(EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)
  OR EXISTS (SELECT 1 FROM document_extracts e WHERE e.document_id = d.id))`;

/**
 * Deletes the points of the entities a retraction deleted or changed. Their ids exist only here (the committed
 * retraction took the rows that named them), so a failure says where the points are found again: `cpe verify
 * --repair` lists the entities collection and removes the points no entity has.
 */
async function deleteEntityPoints(providers: Providers, documentId: number, ids: readonly string[]) {
  if (ids.length === 0) return;
  try {
    await (await providers.vectors()).deletePoints(ENTITY_COLLECTION, ids);
  } catch (error) {
    throw new CpeError(
      ErrorCodes.STEP_FAILED,
      `${ids.length} points of entities retracted with document ${documentId} are left in '${ENTITY_COLLECTION}' ` +
        `(cpe verify --repair removes them): ${describeError(error, 500)}`,
      { cause: error, retryable: isRetryable(error) },
    );
  }
}

/**
 * Removes what a document version contributed: its points (first: the index never points at missing rows),
 * its knowledge (entities no document mentions any more disappear), then its chunks, pages, sections,
 * segments, extract and checkpoints. The documents row and the archived bytes stay, so the version can be
 * reprocessed. Idempotent.
 */
export async function retractDocument(
  db: SqlExecutor,
  providers: Providers,
  documentId: number,
): Promise<void> {
  const [{ n } = { n: 0 }] = await db.query<{ n: number }>(
    'SELECT COUNT(*) AS n FROM chunks WHERE document_id = ?',
    [documentId],
  );
  if (Number(n) > 0) {
    const vectors = await providers.vectors();
    for (const collection of await chunkCollections(db, vectors.kind))
      await vectors.deleteByDocument(collection, documentId);
  }
  const knowledge = await retractDocumentKnowledge(db, documentId);
  await deleteEntityPoints(providers, documentId, knowledge.deletedEntityPointIds);
  if (knowledge.changedEntityIds.length > 0) {
    // entities that other documents still mention, renamed or described anew by those: their points anew
    const { embedEntitiesAgain } = await import('../knowledge/entities.js');
    await embedEntitiesAgain({ db, providers }, knowledge.changedEntityIds);
  }
  await db.transaction(async (tx) => {
    for (const table of [
      'chunks',
      'document_pages',
      'document_sections',
      'document_segments',
      'document_extracts',
      'step_checkpoints',
    ]) {
      await tx.run(`DELETE FROM ${table} WHERE document_id = ?`, [documentId]);
    }
  });
}
