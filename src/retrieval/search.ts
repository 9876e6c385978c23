import type { SqlExecutor } from '../db/sql.js';
import { inLists } from '../db/statement-shapes.js';
import { DEFAULT_MAX_EMBED_CHARS, prepareEmbedText } from '../embed/prepare.js';
import type { Providers } from '../engine/plugin.js';
import { CpeError, ErrorCodes } from '../errors.js';
import { parseJsonColumn } from '../util/json.js';
import { collectionMismatch } from '../vectors/collection-stamp.js';

export interface RetrievalServices {
  db: SqlExecutor;
  providers: Pick<Providers, 'embedder' | 'vectors'>;
}

export interface SearchOptions {
  limit?: number;
  collection?: string;
  /** the query is prepared like chunk texts (default 800) */
  maxEmbedChars?: number;
  /** the embedding model the pipeline's embed step names, if it names one (default: the configured embedder's) */
  embedModel?: string;
  signal?: AbortSignal;
}

/** The embedder options for a pipeline's embed model (as the embed step asks for it), or none for the default. */
export const embedderOptions = (model: string | undefined) => (model ? { model } : undefined);

export interface SearchHit {
  score: number;
  document_id: number;
  document_title: string;
  source_path: string;
  heading_path: string[];
  page: number | null;
  chunk_index: number;
  chunk_id: number;
  /** the chunk's full text from SQL (the point's payload holds only the first 1000 characters) */
  content: string;
}

/** Over-fetch factor: points of superseded or deleted documents may sit in the index until cleaned up. */
const OVERFETCH = 2;
const MAX_FETCH = 2000;

/**
 * Semantic search over the chunks of current documents (is_latest = 1, status != 'deleted'): embeds the query
 * with the configured embedder, asks the vector index, and joins the hits with SQL, the source of truth, so a
 * stale point never shows up as a hit. Refuses a collection built with another model.
 */
export async function searchChunks(
  services: RetrievalServices,
  query: string,
  options: SearchOptions = {},
): Promise<SearchHit[]> {
  const limit = options.limit ?? 10;
  const collection = options.collection ?? 'documents';
  if (!Number.isInteger(limit) || limit < 1)
    throw new CpeError(ErrorCodes.USAGE, 'limit must be a positive integer');
  if (query.trim() === '') throw new CpeError(ErrorCodes.USAGE, 'the search query is empty');

  const [embedder, index] = await Promise.all([
    services.providers.embedder(embedderOptions(options.embedModel)),
    services.providers.vectors(),
  ]);
  const info = await index.describeCollection(collection);
  if (!info.exists || info.points === 0) return [];
  if (
    (info.model !== undefined && info.model !== embedder.model) ||
    info.dimensions !== embedder.dimensions
  ) {
    throw collectionMismatch(index.kind, collection, info, {
      model: embedder.model,
      size: embedder.dimensions,
      distance: 'Cosine',
    });
  }
  const [vector] = await embedder.embed(
    [prepareEmbedText(query, options.maxEmbedChars ?? DEFAULT_MAX_EMBED_CHARS)],
    options.signal,
  );
  // a query of no words (punctuation, symbols) gives the local embedder nothing: its vector is all zeros and
  // every chunk would score 0, in no meaningful order
  if (!vector!.some((v) => v !== 0))
    throw new CpeError(ErrorCodes.USAGE, `the search query '${query.trim()}' has no words to search for`);

  let fetch = Math.min(MAX_FETCH, limit * OVERFETCH + 10);
  for (;;) {
    const results = await index.search(collection, vector, { limit: fetch });
    const hits = await joinWithSql(services.db, results);
    if (hits.length >= limit || results.length < fetch || fetch >= MAX_FETCH) return hits.slice(0, limit);
    fetch = Math.min(MAX_FETCH, fetch * 4);
  }
}

async function joinWithSql(
  db: SqlExecutor,
  results: ReadonlyArray<{ id: string; score: number; payload: Record<string, unknown> }>,
): Promise<SearchHit[]> {
  const documentIds = [
    ...new Set(results.map((r) => Number(r.payload.document_id)).filter(Number.isInteger)),
  ];
  if (documentIds.length === 0) return [];
  const rows: any[] = [];
  for (const list of inLists(documentIds)) {
    rows.push(
      ...(await db.query(
        `SELECT c.id, c.document_id, c.chunk_index, c.content, c.heading_path, c.page_start,
                d.title, d.filename, d.source_path
         FROM chunks c JOIN documents d ON d.id = c.document_id
         WHERE c.document_id IN (${list.marks}) AND d.is_latest = 1 AND d.status <> 'deleted'`,
        list.values,
      )),
    );
  }
  const byKey = new Map(rows.map((r) => [`${Number(r.document_id)}:${Number(r.chunk_index)}`, r]));
  const hits: SearchHit[] = [];
  const seen = new Set<number>();
  for (const result of results) {
    const row = byKey.get(`${Number(result.payload.document_id)}:${Number(result.payload.chunk_index)}`);
    if (!row) continue;
    // a point of a chunk that was replaced since (re-chunked, its new vector not stored yet) holds the old text's
    // vector under the same place: not a hit for the new text. A point's payload names its chunk.
    const chunkId = result.payload.chunk_id;
    if (chunkId !== undefined && chunkId !== null && Number(chunkId) !== Number(row.id)) continue;
    // one hit per chunk, its best (a collection adopted from elsewhere may hold two points of one chunk)
    if (seen.has(Number(row.id))) continue;
    seen.add(Number(row.id));
    hits.push({
      score: result.score,
      document_id: Number(row.document_id),
      document_title: row.title || row.filename,
      source_path: row.source_path,
      heading_path: parseJsonColumn<string[]>(row.heading_path, []),
      page: row.page_start === null || row.page_start === undefined ? null : Number(row.page_start),
      chunk_index: Number(row.chunk_index),
      chunk_id: Number(row.id),
      content: row.content,
    });
  }
  return hits.sort((a, b) => b.score - a.score);
}
