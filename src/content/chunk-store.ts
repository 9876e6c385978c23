import type { SqlExecutor } from '../db/sql.js';
import type { ChunkDraft } from '../text/chunk.js';
import { sha256 } from '../util/hash.js';
import { sqlTime } from '../util/time.js';

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
  'pipeline_version',
  'step_config_hash',
  'created_at',
];

/**
 * Replaces a document's chunks in one transaction (no duplicates, and readers never see the document without
 * chunks). New chunks wait for embeddings (status pending).
 */
export async function replaceChunks(
  db: SqlExecutor,
  documentId: number,
  chunks: ChunkDraft[],
  lineage: { pipelineVersion: string; stepConfigHash: string },
): Promise<void> {
  const now = sqlTime();
  const group = `(${CHUNK_COLUMNS.map(() => '?').join(', ')})`;
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM chunks WHERE document_id = ?', [documentId]);
    for (let i = 0; i < chunks.length; i += 100) {
      const slice = chunks.slice(i, i + 100);
      await tx.run(
        `INSERT INTO chunks (${CHUNK_COLUMNS.join(', ')}) VALUES ${slice.map(() => group).join(', ')}`,
        slice.flatMap((c) => [
          documentId,
          c.index,
          c.content,
          sha256(c.content),
          c.tokenCount,
          JSON.stringify(c.headingPath),
          JSON.stringify({ ...c.metadata, sectionIndex: c.sectionIndex }),
          c.start,
          c.end,
          c.pageStart,
          c.pageEnd,
          'pending',
          lineage.pipelineVersion,
          lineage.stepConfigHash,
          now,
        ]),
      );
    }
  });
}
