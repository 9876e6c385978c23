import { readChunkTexts } from '../content/chunk-store.js';
import type { SqlExecutor } from '../db/sql.js';
import { inLists, marks, rowSlices } from '../db/statement-shapes.js';
import { EmbeddingCache } from '../embed/cache.js';
import type { Logger, PipelineInfo, Providers } from '../engine/plugin.js';
import { CpeError, ErrorCodes } from '../errors.js';
import { parseJsonColumn } from '../util/json.js';
import { chunkPointId } from './point-id.js';
import type { VectorIndex, VectorPoint } from './types.js';

export interface PointServices {
  db: SqlExecutor;
  providers: Pick<Providers, 'vectors' | 'embedder'>;
  log?: Logger;
}

export interface StorePointsOptions {
  collection: string;
  /** the embedding model whose vectors are stored (default: the configured embedder's) */
  model?: string;
  /**
   * Vectors the caller holds already, by text hash (the embed step just computed or looked them up): they are
   * not read back from embedding_cache. Any other chunk's vector is read from there.
   */
  knownVectors?: ReadonlyMap<string, Float32Array>;
  /**
   * Chunk texts the caller holds already, by chunk id (the embed step just read them): they are not read back
   * from chunks. Any other chunk's text is read from there.
   */
  knownContents?: ReadonlyMap<number, string>;
}

export interface StorePointsResult {
  /** points upserted for this document */
  stored: number;
  /** chunks without a vector for the model (not embedded, or failed) */
  withoutVector: number;
  /** points removed: this document's stale ones plus all of its other versions' */
  removedVersions: number[];
  /** why nothing was stored, when nothing was */
  note?: string;
}

/**
 * The embedding model a step that stores or makes room for points uses when its own config names none: the
 * pipeline's embed step's (its `model`, when set), whose vectors the pipeline has; undefined for the configured
 * embedder's. Without it a pipeline whose embed step names a model stored the default model's vectors: none.
 */
export function pipelineEmbedModel(pipeline: Pick<PipelineInfo, 'stepConfigs'>): string | undefined {
  const model = pipeline.stepConfigs('embed')[0]?.model;
  return typeof model === 'string' && model !== '' ? model : undefined;
}

/** The payload's text is cut here: enough to show a hit, small enough to keep points light. */
export const PAYLOAD_CONTENT_CHARS = 1000;

interface DocumentRow {
  id: number;
  title: string | null;
  filename: string;
  source_path: string;
  status: string;
  is_latest: number;
}

/** The Qdrant payload of a chunk: what a search hit shows and what points back to SQL. */
export function chunkPayload(
  document: Pick<DocumentRow, 'id' | 'title' | 'filename' | 'source_path'>,
  chunk: {
    id: number;
    chunk_index: number;
    content: string;
    heading_path: unknown;
    page_start: number | null;
  },
): Record<string, unknown> {
  return {
    document_id: Number(document.id),
    document_title: document.title || document.filename,
    chunk_index: Number(chunk.chunk_index),
    chunk_id: Number(chunk.id),
    content: chunk.content.slice(0, PAYLOAD_CONTENT_CHARS),
    heading_path: parseJsonColumn<string[]>(chunk.heading_path, []),
    source_path: document.source_path,
    page: chunk.page_start === null || chunk.page_start === undefined ? null : Number(chunk.page_start),
  };
}

/** The document and the other versions of its source file, in one statement. */
async function loadVersions(
  db: SqlExecutor,
  documentId: number,
): Promise<{ doc: DocumentRow; others: DocumentRow[] }> {
  const rows = await db.query<DocumentRow>(
    `SELECT id, title, filename, source_path, status, is_latest FROM documents
     WHERE source_path = (SELECT source_path FROM documents WHERE id = ?)`,
    [documentId],
  );
  const doc = rows.find((r) => Number(r.id) === documentId);
  if (!doc) throw new CpeError(ErrorCodes.STEP_FAILED, `document ${documentId} not found in ki_content`);
  return { doc, others: rows.filter((r) => r !== doc) };
}

/**
 * Refuses to store no point for a document whose chunks are embedded, only with another model than `model`:
 * storing nothing would remove the document's points (only the ones stored are kept) and end ok with a warning,
 * while the model stored and the model embedded differ (vector_store's `model` is not the embed step's).
 */
function refuseOtherModels(
  rows: ReadonlyArray<{ status: string; embedding_model: string | null }>,
  model: string,
  documentId: number,
): void {
  const others = new Set(
    rows.flatMap((r) =>
      r.status === 'embedded' && r.embedding_model && r.embedding_model !== model ? [r.embedding_model] : [],
    ),
  );
  if (others.size === 0) return;
  throw new CpeError(
    ErrorCodes.STEP_FAILED,
    `document ${documentId} has no vectors of ${model} to store: its chunks are embedded with ${[...others].join(', ')}; ` +
      "the model whose vectors are stored (vector_store's config.model) must be the embed step's",
  );
}

/** Chunks per `CASE id WHEN ... END` update. */
const CASE_ROWS = 200;

/** chunks.qdrant_id = NULL for the chunks of these documents that still name a point. */
async function clearPointIds(db: SqlExecutor, documentIds: readonly number[]): Promise<void> {
  for (const list of inLists(documentIds)) {
    await db.run(
      `UPDATE chunks SET qdrant_id = NULL WHERE document_id IN (${list.marks}) AND qdrant_id IS NOT NULL`,
      list.values,
    );
  }
}

/**
 * What makes chunks.qdrant_id say which chunks have a point: the point id for stored ones, NULL for the rest. The
 * chunk step writes the (deterministic) point id with the chunk, so usually nothing differs and no chunk row is
 * rewritten.
 */
function pointIdChanges(
  chunks: ReadonlyArray<{ id: number; qdrant_id: string | null }>,
  pointOf: ReadonlyMap<number, string>,
): { set: Array<[number, string]>; clear: number[] } {
  const set: Array<[number, string]> = [];
  const clear: number[] = [];
  for (const chunk of chunks) {
    const id = Number(chunk.id);
    const want = pointOf.get(id) ?? null;
    if ((chunk.qdrant_id ?? null) === want) continue;
    if (want === null) clear.push(id);
    else set.push([id, want]);
  }
  return { set, clear };
}

/** Writes pointIdChanges, one statement per slice. */
async function writePointIds(
  db: SqlExecutor,
  { set, clear }: { set: ReadonlyArray<[number, string]>; clear: readonly number[] },
): Promise<void> {
  for (const slice of rowSlices(db.dialect, set, CASE_ROWS)) {
    await db.run(
      `UPDATE chunks SET qdrant_id = CASE id ${slice.map(() => 'WHEN ? THEN ?').join(' ')} END
       WHERE id IN (${marks(slice.length)})`,
      [...slice.flat(), ...slice.map(([id]) => id)],
    );
  }
  for (const list of inLists(clear)) {
    await db.run(`UPDATE chunks SET qdrant_id = NULL WHERE id IN (${list.marks})`, list.values);
  }
}

/** Sets each row's content from `known`, reading the start of the text of any chunk not in it. */
async function fillContents(
  db: SqlExecutor,
  rows: Array<{ id: number; content: string }>,
  known: ReadonlyMap<number, string>,
): Promise<void> {
  const missing = rows.filter((row) => !known.has(Number(row.id))).map((row) => Number(row.id));
  const read = await readChunkTexts(db, missing, PAYLOAD_CONTENT_CHARS);
  for (const row of rows) row.content = known.get(Number(row.id)) ?? read.get(Number(row.id)) ?? '';
}

/**
 * Stores the points of one document version and then removes what they replace. Order matters: the new points
 * are upserted first (ids are deterministic, so a rerun replaces instead of duplicating), only then are the
 * document's stale points (chunks that no longer exist) deleted. The latest version's points stay until this one
 * is done (its completion retracts the versions it replaces), so a search never finds the document missing, not
 * even when this version fails; search shows latest versions only, so it finds no duplicates meanwhile. A version that is no
 * longer the latest, or a deleted document, gets its points removed instead.
 */
export async function storeDocumentPoints(
  services: PointServices,
  documentId: number,
  options: StorePointsOptions,
): Promise<StorePointsResult> {
  const { db } = services;
  const { doc, others: otherRows } = await loadVersions(db, documentId);
  const index = await services.providers.vectors();
  if (doc.status === 'deleted') {
    const removed = await removeDocumentPoints(services, doc.source_path, options.collection);
    return {
      stored: 0,
      withoutVector: 0,
      removedVersions: removed,
      note: 'document deleted: its points were removed',
    };
  }
  // A version being processed is not latest yet (it becomes latest when done, see finishDocument); only a
  // newer version of the same file makes this one superseded.
  const newer = otherRows.some(
    (o) => o.status !== 'deleted' && Number(o.is_latest) === 1 && Number(o.id) > Number(doc.id),
  );
  if (Number(doc.is_latest) !== 1 && newer) {
    await index.deleteByDocument(options.collection, doc.id);
    await clearPointIds(db, [doc.id]);
    return {
      stored: 0,
      withoutVector: 0,
      removedVersions: [doc.id],
      note: 'a newer version of this document exists: its points are not stored',
    };
  }

  const embedder = await services.providers.embedder(options.model ? { model: options.model } : undefined);
  const model = embedder.model;
  await index.ensureCollection(
    options.collection,
    { size: embedder.dimensions, distance: 'Cosine', model },
    { log: services.log },
  );

  const knownContents = options.knownContents;
  const rows = await db.query<{
    id: number;
    chunk_index: number;
    content: string;
    heading_path: unknown;
    page_start: number | null;
    qdrant_id: string | null;
    status: string;
    embedding_model: string | null;
    text_hash: string | null;
  }>(
    // the payload shows the start of a chunk: substr counts characters (code points), at least as many UTF-16
    // units as chunkPayload keeps, so the result is the same as from the whole content, read in a fraction
    `SELECT c.id, c.chunk_index, ${knownContents ? '' : 'substr(c.content, 1, ?) AS content, '}c.heading_path,
       c.page_start, c.qdrant_id, c.status, c.embedding_model, cv.text_hash
     FROM chunks c LEFT JOIN chunk_vectors cv ON cv.chunk_id = c.id AND cv.model = ?
     WHERE c.document_id = ? ORDER BY c.chunk_index`,
    knownContents ? [model, doc.id] : [PAYLOAD_CONTENT_CHARS, model, doc.id],
  );
  if (knownContents) await fillContents(db, rows, knownContents);
  const known = options.knownVectors;
  const unknown = rows.flatMap((r) =>
    r.text_hash !== null && !known?.has(r.text_hash) ? [r.text_hash] : [],
  );
  // of the right size only: a vector of another size is not this collection's
  const loaded =
    unknown.length > 0
      ? await new EmbeddingCache(db).getMany(model, unknown, embedder.dimensions)
      : new Map<string, Float32Array>();
  const points: VectorPoint[] = [];
  const pointOf = new Map<number, string>();
  let withoutVector = 0;
  for (const row of rows) {
    const vector =
      row.text_hash === null ? undefined : (known?.get(row.text_hash) ?? loaded.get(row.text_hash));
    if (!vector || vector.length !== embedder.dimensions) {
      withoutVector++;
      continue;
    }
    const id = chunkPointId(doc.id, Number(row.chunk_index));
    // the vector is the cache's row and the content the chunk's: the embedded index refers to both
    points.push({
      id,
      vector,
      payload: chunkPayload(doc, row),
      cached: { model, textHash: row.text_hash! },
      contentFromChunk: true,
    });
    pointOf.set(Number(row.id), id);
  }
  if (points.length === 0) refuseOtherModels(rows, model, doc.id);

  await index.upsert(options.collection, points);
  const keepIds = points.map((p) => p.id);
  await index.deleteByDocument(options.collection, doc.id, { keepIds });
  // Versions this one replaces keep their points until it is done (finishDocument retracts them then): the latest
  // one is what search finds meanwhile, and stays found if this version fails. Only versions that are neither
  // latest nor in flight (left over) lose theirs now.
  const others = otherRows
    .filter((o) => Number(o.is_latest) !== 1 && o.status !== 'processing' && o.status !== 'pending')
    .map((o) => Number(o.id));
  for (const other of others) await index.deleteByDocument(options.collection, other);

  const changes = pointIdChanges(rows, pointOf);
  if (changes.set.length > 0 || changes.clear.length > 0 || others.length > 0) {
    await db.transaction(async (tx) => {
      await writePointIds(tx, changes);
      await clearPointIds(tx, others);
    });
  }
  if (withoutVector > 0) {
    services.log?.warn('chunks without a vector were not stored', {
      documentId: doc.id,
      chunks: withoutVector,
      model,
    });
  }
  return { stored: points.length, withoutVector, removedVersions: others };
}

/** Removes the points of every version of a source file (a file gone from the source folder). */
export async function removeDocumentPoints(
  services: Pick<PointServices, 'db' | 'providers'>,
  sourcePath: string,
  collection: string,
): Promise<number[]> {
  const index: VectorIndex = await services.providers.vectors();
  const rows = await services.db.query<{ id: number }>('SELECT id FROM documents WHERE source_path = ?', [
    sourcePath,
  ]);
  const ids = rows.map((r) => Number(r.id));
  for (const id of ids) await index.deleteByDocument(collection, id);
  await services.db.transaction((tx) => clearPointIds(tx, ids));
  return ids;
}
