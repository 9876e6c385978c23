import type { SqlExecutor } from '../db/sql.js';
import { inLists } from '../db/statement-shapes.js';
import { DEFAULT_MAX_EMBED_CHARS, queryEmbedText } from '../embed/prepare.js';
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
  /** the query is prepared as chunk texts are, capped as they are (see queryEmbedText; default 800) */
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

/**
 * The most hits one search returns. A larger limit is refused rather than quietly cut to this: a script asking for
 * 5000 hits must not take 2000 for all there are. (Paging instead would ask the index for ever more points, each
 * round scoring the whole collection again, to return a list no reader goes through.)
 */
export const MAX_SEARCH_LIMIT = 2000;
/** Over-fetch factor: points of superseded or deleted documents may sit in the index until cleaned up. */
const OVERFETCH = 2;
/** the most points asked of the index while too few of them turn out current (room for 4x the largest limit) */
const MAX_FETCH = 4 * MAX_SEARCH_LIMIT;

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
  if (limit > MAX_SEARCH_LIMIT)
    throw new CpeError(ErrorCodes.USAGE, `limit must be at most ${MAX_SEARCH_LIMIT} (is ${limit})`);
  if (query.trim() === '') throw new CpeError(ErrorCodes.USAGE, 'the search query is empty');
  // a query of no words (punctuation, symbols) has nothing to search for; asked of the text itself, since only the
  // local embedder gives such a text an all-zero vector (a dense model returns a vector for anything)
  if (!/[\p{L}\p{N}]/u.test(query))
    throw new CpeError(ErrorCodes.USAGE, `the search query '${query.trim()}' has no words to search for`);

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
    [queryEmbedText(query, embedder, options.maxEmbedChars ?? DEFAULT_MAX_EMBED_CHARS)],
    options.signal,
  );

  let fetch = Math.min(MAX_FETCH, limit * OVERFETCH + 10);
  for (;;) {
    const results = await index.search(collection, vector, { limit: fetch });
    // a chunk that shares nothing with the query is no hit: cosine 0 is no feature in common for the local
    // embedder, and a dense model's non-positive cosine is no match either. Results come best first, so once
    // one is dropped the index has no better ones left to give.
    const matching = results.filter((r) => r.score > 0);
    const hits = await joinWithSql(services.db, matching);
    if (hits.length >= limit || matching.length < fetch || fetch >= MAX_FETCH) return hits.slice(0, limit);
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
