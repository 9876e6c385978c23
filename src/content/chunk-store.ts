import type { SqlExecutor } from '../db/sql.js';
import type { ChunkDraft } from '../text/chunk.js';
import { sha256 } from '../util/hash.js';
import { sqlTime } from '../util/time.js';
import { chunkPointId } from '../vectors/point-id.js';

/** The columns a chunk row is written with (also used by the bulk-write benchmark's raw-driver side). */
export const CHUNK_COLUMNS = [
  'document_id',
  'chunk_index',
  'content',
  'content_hash',
  'token_count',
  'heading_path',
  'metadata',
  'start_offset',
  'end_offset',
  'page_start',
  'page_end',
  'status',
  'qdrant_id',
  'pipeline_version',
  'step_config_hash',
  'created_at',
];

export interface ChunkLineage {
  pipelineVersion: string;
  stepConfigHash: string;
}

/**
 * The values of a new chunk row, in CHUNK_COLUMNS order. qdrant_id is the chunk's point id, known now because
 * point ids are deterministic (document id and chunk index): storing the points later does not rewrite the
 * chunk rows, it only clears the id of a chunk that ends up without a point.
 */
export function chunkRowValues(
  documentId: number,
  chunk: ChunkDraft,
  lineage: ChunkLineage,
  now: string,
): unknown[] {
  return [
    documentId,
    chunk.index,
    chunk.content,
    sha256(chunk.content),
    chunk.tokenCount,
    JSON.stringify(chunk.headingPath),
    JSON.stringify({ ...chunk.metadata, sectionIndex: chunk.sectionIndex }),
    chunk.start,
    chunk.end,
    chunk.pageStart,
    chunk.pageEnd,
    'pending',
    chunkPointId(documentId, chunk.index),
    lineage.pipelineVersion,
    lineage.stepConfigHash,
    now,
  ];
}

/** Rows per INSERT statement. */
const INSERT_ROWS = 100;

/**
 * Replaces a document's chunks in one transaction (no duplicates, and readers never see the document without
 * chunks). New chunks wait for embeddings (status pending).
 */
export async function replaceChunks(
  db: SqlExecutor,
  documentId: number,
  chunks: ChunkDraft[],
  lineage: ChunkLineage,
): Promise<void> {
  const now = sqlTime();
  const group = `(${CHUNK_COLUMNS.map(() => '?').join(', ')})`;
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM chunks WHERE document_id = ?', [documentId]);
    for (let i = 0; i < chunks.length; i += INSERT_ROWS) {
      const slice = chunks.slice(i, i + INSERT_ROWS);
      await tx.run(
        `INSERT INTO chunks (${CHUNK_COLUMNS.join(', ')}) VALUES ${slice.map(() => group).join(', ')}`,
        slice.flatMap((c) => chunkRowValues(documentId, c, lineage, now)),
      );
    }
  });
}
