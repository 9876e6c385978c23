import type { SqlExecutor } from '../db/sql.js';
import { inLists } from '../db/statement-shapes.js';
import { chunkContextOf } from '../embed/embed-chunks.js';
import { DEFAULT_MAX_EMBED_CHARS, queryEmbedText } from '../embed/prepare.js';
import type { Providers } from '../engine/plugin.js';
import { CpeError, ErrorCodes } from '../errors.js';
import { collectionMismatch } from '../vectors/collection-stamp.js';
import type { VectorSearchResult } from '../vectors/types.js';
import { citedSectionOf } from './cited-section.js';
import { type ExactFeatureScore, exactFeatureScore } from './shared-features.js';

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
  /**
   * the heading path of the section the hit cites: of the sections the chunk reaches into, the one whose part
   * shares the most with the query (chunks.heading_path names the one it starts in; see citedSectionOf)
   */
  heading_path: string[];
  /** the page that section starts on in the chunk (null for a chunk without a page) */
  page: number | null;
  chunk_index: number;
  chunk_id: number;
  /** the chunk's full text from SQL (the point's payload holds only the first 1000 characters) */
  content: string;
  /** where the cited section starts in `content` (0: the section the chunk starts in) */
  section_offset: number;
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
 * With the local embedder, how many points (best estimated first) are scored exactly before the best are taken:
 * its cosine is a noisy estimate, and the chunk it ranks 150th may share the most with the query.
 */
export const RERANK_POOL = 200;

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
  const maxEmbedChars = options.maxEmbedChars ?? DEFAULT_MAX_EMBED_CHARS;
  const queryText = queryEmbedText(query, embedder, maxEmbedChars);
  const [vector] = await embedder.embed([queryText], options.signal);
  const exactScore = exactFeatureScore(embedder, queryText, maxEmbedChars);

  /** what each point the index returned turned out to be: its hit, or null (a stale point, no feature in common) */
  const judged = new Map<string, SearchHit | null>();
  /** the chunk metadata of each hit, for the section it cites */
  const metadataOf = new Map<number, unknown>();
  const hitOf = (rows: ChunkRows) => (result: VectorSearchResult) => {
    let hit = judged.get(result.id);
    if (hit === undefined) {
      const judgement = judgePoint(result, rows, exactScore);
      hit = judgement?.hit ?? null;
      if (judgement) metadataOf.set(judgement.hit.chunk_id, judgement.metadata);
      judged.set(result.id, hit);
    }
    return hit;
  };
  const cite = citedSectionOf(query);
  const cited = (hit: SearchHit): SearchHit => {
    const section = cite(hit.content, hit.heading_path, hit.page, metadataOf.get(hit.chunk_id));
    return { ...hit, heading_path: section.headingPath, page: section.page, section_offset: section.offset };
  };
  let fetch = Math.min(MAX_FETCH, Math.max(exactScore ? RERANK_POOL : 0, limit * OVERFETCH + 10));
  for (;;) {
    const results = await index.search(collection, vector, { limit: fetch });
    // A dense model's non-positive cosine is no match; results come best first, so once one is dropped the index
    // has no better ones left to give. The local embedder's cosine only estimates the exact score, which decides:
    // its points are judged all the way down.
    const candidates = exactScore ? results : results.filter((r) => r.score > 0);
    const rows = await loadChunkRows(
      services.db,
      candidates.filter((r) => !judged.has(r.id)),
    );
    const hits = exactScore ? bestHits(candidates, hitOf(rows)) : takeHits(candidates, limit, hitOf(rows));
    // the index returns every point tied with its last one (see SqlVectorIndex.search), and takeHits every hit
    // tied with the last it needs: the order among equal scores is decided here, the same on every backend,
    // before the limit cuts
    if (hits.length >= limit || candidates.length < fetch || fetch >= MAX_FETCH)
      return hits.sort(compareHits).slice(0, limit).map(cited);
    fetch = Math.min(MAX_FETCH, fetch * 4);
  }
}

/** The hits of all `results`, one per chunk: ranked by their exact score, which hitOf gives them. */
function bestHits(
  results: ReadonlyArray<VectorSearchResult>,
  hitOf: (result: VectorSearchResult) => SearchHit | null,
): SearchHit[] {
  const byChunk = new Map<number, SearchHit>();
  for (const result of results) {
    const hit = hitOf(result);
    if (hit && !byChunk.has(hit.chunk_id)) byChunk.set(hit.chunk_id, hit);
  }
  return [...byChunk.values()];
}

/**
 * Best first; equal scores by source path, then chunk index: one order on every backend (a document's id may
 * differ between them, and the index loads its points in another order on each).
 */
export function compareHits(a: SearchHit, b: SearchHit): number {
  if (a.score !== b.score) return b.score - a.score;
  if (a.source_path !== b.source_path) return a.source_path < b.source_path ? -1 : 1;
  return a.chunk_index - b.chunk_index;
}

/**
 * The hits of `results` (best first), one per chunk, its best (a collection adopted from elsewhere may hold two
 * points of one chunk): as many as `limit` and those tied with the last of them. Points further down are not
 * judged: the feature test costs about as much as embedding the chunk.
 */
function takeHits(
  results: ReadonlyArray<VectorSearchResult>,
  limit: number,
  hitOf: (result: VectorSearchResult) => SearchHit | null,
): SearchHit[] {
  const hits: SearchHit[] = [];
  const seen = new Set<number>();
  for (const result of results) {
    if (hits.length >= limit && result.score < hits[limit - 1]!.score) break;
    const hit = hitOf(result);
    if (!hit || seen.has(hit.chunk_id)) continue;
    seen.add(hit.chunk_id);
    hits.push(hit);
  }
  return hits;
}

interface HitRow {
  id: number;
  document_id: number;
  chunk_index: number;
  content: string;
  heading_path: unknown;
  metadata: unknown;
  page_start: number | null;
  title: string | null;
  filename: string;
  source_path: string;
}

/** Chunk rows by id, and by place ("document id:chunk index") for points that name no chunk. */
interface ChunkRows {
  byId: Map<number, HitRow>;
  byPlace: Map<string, HitRow>;
}

/** The chunks of current documents (the latest version, not deleted) that `condition` selects, with their document. */
const currentChunksWhere = (condition: string) =>
  `SELECT c.id, c.document_id, c.chunk_index, c.content, c.heading_path, c.metadata, c.page_start,
          d.title, d.filename, d.source_path
   FROM chunks c JOIN documents d ON d.id = c.document_id
   WHERE ${condition} AND d.is_latest = 1 AND d.status <> 'deleted'`;

/**
 * A point's hit (with its chunk's metadata), from its chunk's row in SQL, the source of truth; null for a point that
 * is no hit: its chunk is gone or not current, or (exactScore given) the chunk shares no feature with the query.
 * With exactScore, the hit's score is the chunk's exact score, not the index's estimate. The hit names the section
 * the chunk starts in until the final hits are cited.
 */
function judgePoint(
  result: VectorSearchResult,
  { byId, byPlace }: ChunkRows,
  exactScore: ExactFeatureScore | undefined,
): { hit: SearchHit; metadata: unknown } | null {
  // a point names its chunk: one of a chunk that was replaced since (re-chunked, its new vector not stored yet)
  // holds the old text's vector under the same place, and is no hit for the new text. A point of a collection
  // made elsewhere may not name it: then its place (document, chunk index) finds it.
  const chunkId = pointChunkId(result);
  const row = chunkId === undefined ? byPlace.get(placeOf(result)) : byId.get(chunkId);
  if (!row) return null;
  const context = chunkContextOf(row);
  const score = exactScore ? exactScore(row.content, context) : result.score;
  if (exactScore && score === 0) return null;
  const hit = {
    score,
    document_id: Number(row.document_id),
    document_title: row.title || row.filename,
    source_path: row.source_path,
    heading_path: [...(context.headingPath ?? [])],
    page: row.page_start === null || row.page_start === undefined ? null : Number(row.page_start),
    chunk_index: Number(row.chunk_index),
    chunk_id: Number(row.id),
    content: row.content,
    section_offset: 0,
  };
  return { hit, metadata: row.metadata };
}

/** The chunk a point's payload names, if it names one. */
function pointChunkId(result: VectorSearchResult): number | undefined {
  const chunkId = result.payload.chunk_id;
  return chunkId === undefined || chunkId === null ? undefined : Number(chunkId);
}

const placeOf = (result: VectorSearchResult) =>
  `${Number(result.payload.document_id)}:${Number(result.payload.chunk_index)}`;

/**
 * The current chunks the points name, by id; those of points that name no chunk, by place. Only these chunks
 * are read: reading all chunks of each document with a hit read thousands of texts to return ten.
 */
async function loadChunkRows(
  db: SqlExecutor,
  results: ReadonlyArray<VectorSearchResult>,
): Promise<ChunkRows> {
  const chunkIds = new Set<number>();
  const placeless = results.filter((r) => pointChunkId(r) === undefined);
  for (const result of results) {
    const chunkId = pointChunkId(result);
    if (chunkId !== undefined && Number.isInteger(chunkId)) chunkIds.add(chunkId);
  }
  const byId = new Map<number, HitRow>();
  for (const list of inLists([...chunkIds])) {
    const rows = await db.query<HitRow>(currentChunksWhere(`c.id IN (${list.marks})`), list.values);
    for (const row of rows) byId.set(Number(row.id), row);
  }
  const byPlace = new Map<string, HitRow>();
  const documentIds = [...new Set(placeless.map((r) => Number(r.payload.document_id)))].filter(
    Number.isInteger,
  );
  const indexes = [...new Set(placeless.map((r) => Number(r.payload.chunk_index)))].filter(Number.isInteger);
  for (const documents of inLists(documentIds)) {
    for (const chunks of inLists(indexes)) {
      const rows = await db.query<HitRow>(
        currentChunksWhere(`c.document_id IN (${documents.marks}) AND c.chunk_index IN (${chunks.marks})`),
        [...documents.values, ...chunks.values],
      );
      for (const row of rows) byPlace.set(`${Number(row.document_id)}:${Number(row.chunk_index)}`, row);
    }
  }
  return { byId, byPlace };
}
