import type { SqlExecutor } from '../db/sql.js';
import { blobToVector } from '../embed/vector-blob.js';
import type { Logger, Providers } from '../engine/plugin.js';
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

async function loadDocument(db: SqlExecutor, documentId: number): Promise<DocumentRow> {
  const [doc] = await db.query<DocumentRow>(
    'SELECT id, title, filename, source_path, status, is_latest FROM documents WHERE id = ?',
    [documentId],
  );
  if (!doc) throw new CpeError(ErrorCodes.STEP_FAILED, `document ${documentId} not found in ki_content`);
  return doc;
}

async function otherVersions(db: SqlExecutor, sourcePath: string, documentId: number): Promise<number[]> {
  const rows = await db.query<{ id: number }>('SELECT id FROM documents WHERE source_path = ? AND id <> ?', [
    sourcePath,
    documentId,
  ]);
  return rows.map((r) => Number(r.id));
}

async function clearPointIds(db: SqlExecutor, documentIds: readonly number[]): Promise<void> {
  for (const id of documentIds)
    await db.run('UPDATE chunks SET qdrant_id = NULL WHERE document_id = ?', [id]);
}

/**
 * Stores the points of one document version and then removes what they replace. Order matters: the new points
 * are upserted first (ids are deterministic, so a rerun replaces instead of duplicating), only then are the
 * document's stale points (chunks that no longer exist) and all points of its other versions (same source_path)
 * deleted. A search therefore never finds the document missing, and duplicates never last. A version that is no
 * longer the latest, or a deleted document, gets its points removed instead.
 */
export async function storeDocumentPoints(
  services: PointServices,
  documentId: number,
  options: StorePointsOptions,
): Promise<StorePointsResult> {
  const { db } = services;
  const doc = await loadDocument(db, documentId);
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
  const [newer] = await db.query<{ id: number }>(
    "SELECT id FROM documents WHERE source_path = ? AND id <> ? AND status <> 'deleted' AND (is_latest = 1 AND id > ?) LIMIT 1",
    [doc.source_path, doc.id, doc.id],
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
  await index.ensureCollection(options.collection, { size: embedder.dimensions, distance: 'Cosine', model });

  const rows = await db.query<any>(
    `SELECT c.id, c.chunk_index, c.content, c.heading_path, c.page_start, ec.vector
     FROM chunks c
     LEFT JOIN chunk_vectors cv ON cv.chunk_id = c.id AND cv.model = ?
     LEFT JOIN embedding_cache ec ON ec.model = cv.model AND ec.text_hash = cv.text_hash
     WHERE c.document_id = ? ORDER BY c.chunk_index`,
    [model, doc.id],
  );
  const points: VectorPoint[] = [];
  let withoutVector = 0;
  for (const row of rows) {
    if (!row.vector) {
      withoutVector++;
      continue;
    }
    const vector = blobToVector(row.vector);
    if (vector.length !== embedder.dimensions) {
      withoutVector++;
      continue;
    }
    points.push({
      id: chunkPointId(doc.id, Number(row.chunk_index)),
      vector,
      payload: chunkPayload(doc, row),
    });
  }

  await index.upsert(options.collection, points);
  const keepIds = points.map((p) => p.id);
  await index.deleteByDocument(options.collection, doc.id, { keepIds });
  const others = await otherVersions(db, doc.source_path, doc.id);
  for (const other of others) await index.deleteByDocument(options.collection, other);

  await db.transaction(async (tx) => {
    await tx.run('UPDATE chunks SET qdrant_id = NULL WHERE document_id = ?', [doc.id]);
    for (const p of points) {
      await tx.run('UPDATE chunks SET qdrant_id = ? WHERE id = ?', [p.id, Number(p.payload.chunk_id)]);
    }
    for (const other of others)
      await tx.run('UPDATE chunks SET qdrant_id = NULL WHERE document_id = ?', [other]);
  });
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
  await clearPointIds(services.db, ids);
  return ids;
}
