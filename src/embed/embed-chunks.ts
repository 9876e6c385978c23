import type { SqlExecutor } from '../db/sql.js';
import { inLists, rowSlices } from '../db/statement-shapes.js';
import type { Logger } from '../engine/plugin.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';
import { EmbeddingCache } from './cache.js';
import {
  type ChunkContext,
  chunkEmbedInput,
  DEFAULT_MAX_EMBED_CHARS,
  embedCharLimit,
  prepareChunkInputs,
} from './prepare.js';
import { type Embedder, EmbedInputError } from './types.js';
import { unitVector } from './vector-blob.js';

export interface ChunkRow {
  id: number;
  content: string;
  status?: string;
  embedding_model?: string | null;
  /** title and heading path, when the caller read them with the chunk (else they are read here) */
  context?: ChunkContext;
}

export interface EmbedChunksOptions {
  /** cap for embedders with a context window (default 800); the local embedder reads whole chunks */
  maxEmbedChars?: number;
  /** chunks looked up, embedded and written per round (default DEFAULT_EMBED_BATCH) */
  batchSize?: number;
  signal?: AbortSignal;
  log?: Logger;
}

export interface EmbedChunksResult {
  /** chunks given */
  total: number;
  /** chunks that already had a vector for this model and text */
  upToDate: number;
  /** vectors taken from the embedding cache */
  cached: number;
  /** vectors computed by the embedder now */
  embedded: number;
  /** chunks the embedder rejected (status 'failed') */
  failed: Array<{ chunkId: number; message: string }>;
  /** the vectors this call computed or read from the cache, by text hash (unit length, as stored) */
  vectors: Map<string, Float32Array>;
}

/** Rows per multi-row INSERT. */
const ROWS_PER_STATEMENT = 200;

interface Prepared {
  chunk: ChunkRow;
  /** the text embedded for the chunk (undefined when the embedder prepared it: see Embedder.prepareAndEmbed) */
  text?: string;
  /** its cache key */
  hash: string;
}

/** chunk_vectors: which cached vector each chunk has for the model (one multi-row upsert per slice). */
async function linkVectors(tx: SqlExecutor, model: string, rows: readonly Prepared[]): Promise<void> {
  const now = sqlTime();
  for (const slice of rowSlices(tx.dialect, rows, ROWS_PER_STATEMENT)) {
    const values = slice.map(() => '(?, ?, ?, ?)').join(', ');
    const params = slice.flatMap((p) => [p.chunk.id, model, p.hash, now]);
    await tx.run(
      tx.dialect === 'mysql'
        ? `INSERT INTO chunk_vectors (chunk_id, model, text_hash, created_at) VALUES ${values}
           ON DUPLICATE KEY UPDATE text_hash = VALUES(text_hash), created_at = VALUES(created_at)`
        : `INSERT INTO chunk_vectors (chunk_id, model, text_hash, created_at) VALUES ${values}
           ON CONFLICT (chunk_id, model) DO UPDATE SET text_hash = excluded.text_hash, created_at = excluded.created_at`,
      params,
    );
  }
}

/** chunks.status (and embedding_model, for 'embedded') of many chunks, one statement per slice of ids. */
async function setStatus(
  tx: SqlExecutor,
  ids: readonly number[],
  status: 'embedded' | 'failed',
  model?: string,
): Promise<void> {
  for (const list of inLists(ids)) {
    if (status === 'embedded') {
      await tx.run(`UPDATE chunks SET status = 'embedded', embedding_model = ? WHERE id IN (${list.marks})`, [
        model,
        ...list.values,
      ]);
    } else {
      await tx.run(`UPDATE chunks SET status = 'failed' WHERE id IN (${list.marks})`, list.values);
    }
  }
}

/** A chunk's context from its row: chunks.heading_path (JSON) and the document's title. */
export function chunkContextOf(row: { heading_path: unknown; title: string | null }): ChunkContext {
  const headingPath = parseJsonColumn<unknown>(row.heading_path, []);
  return { title: row.title, headingPath: Array.isArray(headingPath) ? headingPath.map(String) : [] };
}

/** Title and heading path of each chunk, from SQL, so every caller embeds exactly the same text for a chunk. */
async function loadContexts(db: SqlExecutor, ids: readonly number[]): Promise<Map<number, ChunkContext>> {
  const contexts = new Map<number, ChunkContext>();
  for (const list of inLists(ids)) {
    const rows = await db.query<{ id: number; heading_path: unknown; title: string | null }>(
      `SELECT c.id, c.heading_path, d.title FROM chunks c JOIN documents d ON d.id = c.document_id
       WHERE c.id IN (${list.marks})`,
      list.values,
    );
    for (const row of rows) contexts.set(Number(row.id), chunkContextOf(row));
  }
  return contexts;
}

/** The hash of the text each chunk is linked to a cached vector of (chunk_vectors joined with the cache). */
async function linkedHashes(
  db: SqlExecutor,
  embedder: Embedder,
  chunks: readonly ChunkRow[],
): Promise<Map<number, string>> {
  const linked = new Map<number, string>();
  for (const list of inLists(chunks.map((c) => c.id))) {
    const rows = await db.query<{ chunk_id: number; text_hash: string }>(
      `SELECT cv.chunk_id, cv.text_hash FROM chunk_vectors cv
       JOIN embedding_cache ec ON ec.model = cv.model AND ec.text_hash = cv.text_hash AND ec.dimensions = ?
       WHERE cv.model = ? AND cv.chunk_id IN (${list.marks})`,
      [embedder.dimensions, embedder.model, ...list.values],
    );
    for (const row of rows) linked.set(Number(row.chunk_id), row.text_hash);
  }
  return linked;
}

/** chunks looked up, embedded and written per round unless the step's batch_size says otherwise */
export const DEFAULT_EMBED_BATCH = 256;

interface RoundVectors {
  /** by text hash: from the cache, an earlier round or the embedder (unit length) */
  vectors: Map<string, Float32Array>;
  /** the ones the embedder computed now, to be cached */
  fresh: Array<{ hash: string; vector: Float32Array }>;
  /** texts the embedder rejected for good, by hash */
  failedHashes: Map<string, string>;
  /** chunks of the round whose vector was found (cache or an earlier round) */
  cachedHere: number;
}

/** The embedder's vectors for the texts with these hashes; undefined for a text it rejected (failedHashes: why). */
async function embedTexts(
  embedder: Embedder,
  hashes: readonly string[],
  round: readonly Prepared[],
  failedHashes: Map<string, string>,
  signal?: AbortSignal,
): Promise<Array<Float32Array | undefined>> {
  const textOf = new Map(round.map((p) => [p.hash, p.text!]));
  try {
    return await embedder.embed(
      hashes.map((h) => textOf.get(h)!),
      signal,
    );
  } catch (error) {
    if (!(error instanceof EmbedInputError)) throw error;
    for (const f of error.failures) failedHashes.set(hashes[f.index]!, f.message);
    return error.vectors;
  }
}

/**
 * A vector for each of the round's chunks that need one: from an earlier round, the cache (`vectors`, what the
 * lookup found, which this fills), the embedder's prepareAndEmbed (`computed`) or the embedder now.
 */
async function embedRound(
  embedder: Embedder,
  round: readonly Prepared[],
  vectors: Map<string, Float32Array>,
  earlier: ReadonlyMap<string, Float32Array>,
  computed: ReadonlyMap<string, Float32Array> | undefined,
  signal?: AbortSignal,
): Promise<RoundVectors> {
  for (const p of round) {
    const known = earlier.get(p.hash);
    if (known) vectors.set(p.hash, known);
  }
  const cachedHere = round.filter((p) => vectors.has(p.hash)).length;
  const missing = [...new Set(round.filter((p) => !vectors.has(p.hash)).map((p) => p.hash))];
  const fresh: Array<{ hash: string; vector: Float32Array }> = [];
  const failedHashes = new Map<string, string>();
  if (missing.length > 0) {
    const got = computed
      ? missing.map((h) => computed.get(h))
      : await embedTexts(embedder, missing, round, failedHashes, signal);
    missing.forEach((hash, i) => {
      const raw = got[i];
      if (!raw) return;
      // unit length in the cache: the embedded index then refers to the cached vector instead of a copy
      // (prepareAndEmbed's vectors are unit length already: see PreparedVectors)
      const vector = computed ? raw : unitVector(raw);
      vectors.set(hash, vector);
      fresh.push({ hash, vector });
    });
  }
  return { vectors, fresh, failedHashes, cachedHere };
}

/** One round's writes, in one transaction: new vectors cached, chunks linked to them, chunk statuses. */
async function writeRound(
  db: SqlExecutor,
  cache: EmbeddingCache,
  model: string,
  round: readonly Prepared[],
  got: RoundVectors,
  result: EmbedChunksResult,
): Promise<void> {
  const embeddedHere: Prepared[] = [];
  const failedIds: number[] = [];
  for (const p of round) {
    const failure = got.failedHashes.get(p.hash);
    if (failure === undefined) {
      embeddedHere.push(p);
      continue;
    }
    failedIds.push(p.chunk.id);
    result.failed.push({ chunkId: p.chunk.id, message: failure });
  }
  // set-based: a few multi-row statements per round, whatever the number of chunks
  await db.transaction(async (tx) => {
    if (got.fresh.length > 0) await cache.putMany(model, got.fresh, tx);
    await linkVectors(tx, model, embeddedHere);
    // a chunk already marked embedded with this model (its text or context changed) keeps its row as it is
    await setStatus(
      tx,
      embeddedHere
        .filter((p) => !(p.chunk.status === 'embedded' && p.chunk.embedding_model === model))
        .map((p) => p.chunk.id),
      'embedded',
      model,
    );
    await setStatus(tx, failedIds, 'failed');
  });
  for (const p of embeddedHere) {
    const vector = got.vectors.get(p.hash);
    if (vector) result.vectors.set(p.hash, vector);
  }
  result.cached += got.cachedHere;
  result.embedded += round.length - got.cachedHere - failedIds.length;
}

/**
 * Gives every chunk a vector for the embedder's model: chunks whose prepared text already has one (linked in
 * chunk_vectors and present in the cache) are left alone; the rest come from the cache or, on a miss, from the
 * embedder. The prepared text is the chunk's context line (document title › heading path) and its content,
 * capped at maxEmbedChars for embedders with a context window (see chunkEmbedText, embedCharLimit). Writes the
 * cache, chunk_vectors and chunks.status/embedding_model; a chunk the embedder rejects for good is marked
 * 'failed' while the others of its document proceed. The local embedder prepares, hashes and embeds the texts on
 * its worker threads (Embedder.prepareAndEmbed) before the lookups: ~10% of the main thread's work in an
 * ingestion pass of the shared corpus was preparing and hashing them here.
 */
export async function embedChunks(
  db: SqlExecutor,
  embedder: Embedder,
  chunks: readonly ChunkRow[],
  options: EmbedChunksOptions = {},
): Promise<EmbedChunksResult> {
  const maxChars = embedCharLimit(embedder, options.maxEmbedChars ?? DEFAULT_MAX_EMBED_CHARS);
  const model = embedder.model;
  const cache = new EmbeddingCache(db);
  const contexts = await loadContexts(
    db,
    chunks.filter((c) => !c.context).map((c) => c.id),
  );
  const result: EmbedChunksResult = {
    total: chunks.length,
    upToDate: 0,
    cached: 0,
    embedded: 0,
    failed: [],
    vectors: new Map(),
  };

  /** a chunk marked embedded with this model (or whose caller did not say): it is up to date if its link is */
  const markedEmbedded = (c: ChunkRow) =>
    (c.status === undefined || c.status === 'embedded') &&
    (c.embedding_model === undefined || c.embedding_model === model);

  /** vectors of the rounds fetched so far, by text hash */
  const earlier = new Map<string, Float32Array>();

  /**
   * A round's chunks with their prepared texts' hashes, less the ones already linked to a vector for exactly
   * that text (up to date), and their vectors. An embedder that prepares texts itself (the local one, on its
   * worker threads) embeds the whole round first, since its vectors cost less than looking them up: `computed`.
   */
  const fetchRound = async (round: readonly ChunkRow[]): Promise<{ todo: Prepared[]; got: RoundVectors }> => {
    const inputs = round.map((c) => chunkEmbedInput(c.content, c.context ?? contexts.get(c.id) ?? {}));
    let prepared: Prepared[];
    let computed: Map<string, Float32Array> | undefined;
    if (embedder.prepareAndEmbed) {
      const got = await embedder.prepareAndEmbed(inputs, maxChars, options.signal);
      prepared = round.map((chunk, i) => ({ chunk, hash: got.hashes[i]! }));
      computed = new Map(got.hashes.map((hash, i) => [hash, got.vectors[i]!]));
    } else {
      const { texts, hashes } = prepareChunkInputs(inputs, maxChars);
      prepared = round.map((chunk, i) => ({ chunk, text: texts[i], hash: hashes[i]! }));
    }
    // both lookups queued at once, before the write of the round before (the connection takes them in turn)
    const unknown = [...new Set(prepared.filter((p) => !earlier.has(p.hash)).map((p) => p.hash))];
    // a new document's chunks are all pending: none can be up to date, and their links need no lookup
    const [linked, cached] = await Promise.all([
      round.some(markedEmbedded) ? linkedHashes(db, embedder, round) : new Map<number, string>(),
      cache.getMany(model, unknown, embedder.dimensions),
    ]);
    const todo = prepared.filter((p) => {
      const current = linked.get(p.chunk.id) === p.hash && markedEmbedded(p.chunk);
      if (current) result.upToDate++;
      return !current;
    });
    return { todo, got: await embedRound(embedder, todo, cached, earlier, computed, options.signal) };
  };

  // Rounds overlap: while one round is written, the next is prepared, looked up and embedded (on the worker
  // threads or the server), so the embedder is not idle during the writes and a large document's last write is
  // one round's, not the whole document's. A text repeated in a later round takes the vector an earlier round
  // got, as it would from the cache those writes fill.
  const rounds: ChunkRow[][] = [];
  const roundSize = Math.max(1, options.batchSize ?? DEFAULT_EMBED_BATCH);
  for (let start = 0; start < chunks.length; start += roundSize)
    rounds.push(chunks.slice(start, start + roundSize));
  const startRound = (round: ChunkRow[]) => {
    const fetching = fetchRound(round);
    // awaited after the round before is written; a failure meanwhile is not an unhandled rejection
    fetching.catch(() => undefined);
    return fetching;
  };
  let next = rounds.length > 0 ? startRound(rounds[0]!) : undefined;
  for (let i = 0; i < rounds.length; i++) {
    const { todo, got } = await next!;
    for (const [hash, vector] of got.vectors) earlier.set(hash, vector);
    options.signal?.throwIfAborted();
    next = i + 1 < rounds.length ? startRound(rounds[i + 1]!) : undefined;
    if (todo.length > 0) await writeRound(db, cache, model, todo, got, result);
  }
  for (const f of result.failed) {
    options.log?.warn('chunk could not be embedded', { chunkId: f.chunkId, error: f.message });
  }
  return result;
}
