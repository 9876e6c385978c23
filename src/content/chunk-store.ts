import type { SqlExecutor } from '../db/sql.js';
import { inLists, marks, rowSlices } from '../db/statement-shapes.js';
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
  contentHash: string = sha256(chunk.content),
): unknown[] {
  return [
    documentId,
    chunk.index,
    chunk.content,
    contentHash,
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

/** A chunk's text as the chunk step wrote it, and the content_hash it was written with. */
export interface WrittenChunk {
  content: string;
  contentHash: string;
}

/** The texts a document's chunk step wrote in this run, by chunk_index (kept in the run's per-document memo). */
export type WrittenChunks = ReadonlyMap<number, WrittenChunk>;

const WRITTEN_CHUNKS = 'chunk-store:written';

/**
 * Replaces a document's chunks in one transaction (no duplicates, and readers never see the document without
 * chunks). New chunks wait for embeddings (status pending). Returns their texts by chunk index; a step keeps them
 * in its memo (rememberWrittenChunks) for the steps after it.
 */
export async function replaceChunks(
  db: SqlExecutor,
  documentId: number,
  chunks: ChunkDraft[],
  lineage: ChunkLineage,
): Promise<WrittenChunks> {
  const now = sqlTime();
  const group = `(${marks(CHUNK_COLUMNS.length)})`;
  const written = new Map<number, WrittenChunk>();
  for (const chunk of chunks)
    written.set(chunk.index, { content: chunk.content, contentHash: sha256(chunk.content) });
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM chunks WHERE document_id = ?', [documentId]);
    for (const slice of rowSlices(tx.dialect, chunks, INSERT_ROWS)) {
      await tx.run(
        `INSERT INTO chunks (${CHUNK_COLUMNS.join(', ')}) VALUES ${slice.map(() => group).join(', ')}`,
        slice.flatMap((c) => chunkRowValues(documentId, c, lineage, now, written.get(c.index)!.contentHash)),
      );
    }
  });
  return written;
}

/** Keeps what replaceChunks wrote in a document's memo, for the steps after the chunk step in the same run. */
export function rememberWrittenChunks(memo: Map<string, unknown>, written: WrittenChunks): void {
  memo.set(WRITTEN_CHUNKS, written);
}

/**
 * The content of chunk rows, by chunk id: the text this run's chunk step wrote (from the memo) for every row whose
 * content_hash is still that text's, the rest read from SQL. The embed step and the point store need every chunk's
 * text right after the chunk step wrote it; their two reads of it took ~14% of the main thread's SQL time in an
 * ingestion pass of the shared corpus (and on MariaDB, the texts crossed the wire twice more).
 */
export async function chunkContents(
  db: SqlExecutor,
  memo: ReadonlyMap<string, unknown> | undefined,
  rows: ReadonlyArray<{ id: number; chunk_index: number; content_hash: string }>,
): Promise<Map<number, string>> {
  const written = memo?.get(WRITTEN_CHUNKS) as WrittenChunks | undefined;
  const contents = new Map<number, string>();
  const missing: number[] = [];
  for (const row of rows) {
    const chunk = written?.get(Number(row.chunk_index));
    if (chunk && chunk.contentHash === row.content_hash) contents.set(Number(row.id), chunk.content);
    else missing.push(Number(row.id));
  }
  for (const [id, content] of await readChunkTexts(db, missing)) contents.set(id, content);
  return contents;
}

/**
 * Chunk texts by chunk id, read from SQL; with `prefixChars`, only that many characters from the start of each
 * (substr counts code points: at least as many UTF-16 units).
 */
export async function readChunkTexts(
  db: SqlExecutor,
  ids: readonly number[],
  prefixChars?: number,
): Promise<Map<number, string>> {
  const texts = new Map<number, string>();
  const column = prefixChars === undefined ? 'content' : 'substr(content, 1, ?) AS content';
  for (const list of inLists(ids)) {
    const found = await db.query<{ id: number; content: string }>(
      `SELECT id, ${column} FROM chunks WHERE id IN (${list.marks})`,
      prefixChars === undefined ? list.values : [prefixChars, ...list.values],
    );
    for (const row of found) texts.set(Number(row.id), row.content);
  }
  return texts;
}
