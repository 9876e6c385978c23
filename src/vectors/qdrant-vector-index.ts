import type { QdrantClient } from '@qdrant/js-client-rest';
import type { SqlExecutor } from '../db/sql.js';
import { inList } from '../db/statement-shapes.js';
import { CpeError, ErrorCodes, isTransientNodeError, ProviderError } from '../errors.js';
import { ENTITY_COLLECTION } from '../knowledge/retract.js';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../llm/provider-errors.js';
import { splitUrlCredentials } from '../util/credentials.js';
import { clampCosine } from './clamp-cosine.js';
import {
  type CollectionStamp,
  checkStamp,
  collectionMismatch,
  deleteStamp,
  moveStamp,
  readStamp,
  writeStamp,
} from './collection-stamp.js';
import { retryAfterSeen, watchRetryAfter } from './retry-after-seen.js';
import type {
  CollectionInfo,
  CollectionSpec,
  EnsureCollectionOptions,
  IndexLog,
  PointRef,
  VectorIndex,
  VectorPoint,
  VectorSearchResult,
} from './types.js';

export interface QdrantIndexOptions {
  url: string;
  /** QDRANT_API_KEY; sent as a header, never logged or put into an error */
  apiKey?: string;
  /** ki_content, where collections are stamped with model and size */
  db: SqlExecutor;
  /** per request (default 60000) */
  timeoutMs?: number;
  /** retries on connection errors, timeouts, 429 and 5xx (default 4) */
  maxRetries?: number;
  retryDelayMs?: number;
  /** points per upsert request (default 128) */
  upsertBatch?: number;
  /** where warnings go when a call brings no logger of its own (default: standard error) */
  log?: IndexLog;
}

/** Payload fields that get an index: the filters cpe uses (document_id) and what people filter by by hand. */
export const PAYLOAD_INDEXES: ReadonlyArray<{ field: string; schema: 'integer' | 'keyword' }> = [
  { field: 'document_id', schema: 'integer' },
  { field: 'chunk_index', schema: 'integer' },
  { field: 'source_path', schema: 'keyword' },
];

const SCROLL_PAGE = 1000;
const DELETE_BATCH = 1000;
/** points of a collection stamped at another Qdrant looked up in SQL to tell a moved copy from another data set's */
const OWNERSHIP_SAMPLE = 32;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The URL as shown to people: no user info, no trailing slash. */
function displayUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

/**
 * Qdrant through @qdrant/js-client-rest. The client itself does not retry; every call here is retried with
 * capped exponential backoff on connection errors, timeouts, 429 and 5xx. Model and size are stamped in SQL
 * (vector_collections, backend 'qdrant') and checked against the collection's own config.
 */
export class QdrantVectorIndex implements VectorIndex {
  readonly kind = 'qdrant' as const;
  readonly location: string;
  private readonly clientOptions: ConstructorParameters<typeof QdrantClient>[0];
  /** the client library (and undici under it) is loaded on first use, not when the module is */
  private client?: Promise<QdrantClient>;
  private readonly apiKeyOverHttp: boolean;
  private readonly db: SqlExecutor;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;
  /** how long one request may go unanswered */
  private readonly timeoutMs: number;
  private readonly upsertBatch: number;
  private readonly ensured = new Map<string, string>();
  /** collections stamped at another Qdrant, per name: whether their points are this data set's (checkLocation) */
  private readonly moved = new Map<string, Promise<boolean>>();
  private readonly url: string;
  private readonly log: IndexLog;

  constructor(options: QdrantIndexOptions) {
    this.location = displayUrl(options.url);
    this.url = options.url;
    this.log = options.log ?? { warn: (message) => process.stderr.write(`cpe: warning: ${message}\n`) };
    this.db = options.db;
    this.maxRetries = options.maxRetries ?? 4;
    this.retryDelayMs = options.retryDelayMs ?? 250;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.upsertBatch = options.upsertBatch ?? 128;
    const apiKey = options.apiKey || undefined;
    this.apiKeyOverHttp = apiKey !== undefined && options.url.startsWith('http:');
    // the client ignores user and password in its URL: they go as a Basic authorization on every request (to a
    // reverse proxy in front of Qdrant), beside the api-key
    const { url, authorization } = splitUrlCredentials(options.url);
    this.clientOptions = {
      url,
      apiKey,
      checkCompatibility: false,
      timeout: this.timeoutMs,
      ...(authorization ? { headers: { authorization } } : {}),
    };
  }

  private qdrant(): Promise<QdrantClient> {
    // the client drops the Retry-After of a 429 (see retry-after-seen.ts): read as undici receives it
    watchRetryAfter();
    this.client ??= import('@qdrant/js-client-rest').then(({ QdrantClient }) => {
      const originalWarn = console.warn;
      // the client warns on an API key over http (a local test setup); that warning is not for cpe's users
      if (this.apiKeyOverHttp) console.warn = () => undefined;
      try {
        return new QdrantClient(this.clientOptions);
      } finally {
        console.warn = originalWarn;
      }
    });
    return this.client;
  }

  /** Runs one client call with retries; errors name the operation and the server, never the key. */
  private async call<T>(operation: string, fn: (client: QdrantClient) => Promise<T>): Promise<T> {
    const client = await this.qdrant();
    for (let attempt = 0; ; attempt++) {
      const began = performance.now();
      try {
        return await fn(client);
      } catch (error) {
        // a 429 with a Retry-After reaches cpe without its status: as the client's own error for it, or as its
        // failure to read the header (an HTTP date)
        const rateLimited = isRateLimited(error);
        const status = rateLimited ? 429 : (error as { status?: unknown }).status;
        const cause = (error as { cause?: unknown }).cause;
        const name = (error as Error).name;
        const transient =
          (typeof status === 'number' && (status === 429 || status >= 500)) ||
          name === 'QdrantClientTimeoutError' ||
          isTransientNodeError(error) ||
          isTransientNodeError(cause) ||
          (error instanceof TypeError && /fetch failed/i.test(error.message));
        const detail =
          name === 'QdrantClientTimeoutError'
            ? `no answer within ${this.timeoutMs / 1000} s (timed out)`
            : rateLimited
              ? 'HTTP 429: Too Many Requests'
              : describeQdrantError(error);
        if (!transient) {
          throw new ProviderError(`Qdrant ${this.location}: ${operation} failed: ${detail}`, {
            cause: error,
            retryable: false,
            status: typeof status === 'number' ? status : undefined,
          });
        }
        if (attempt >= this.maxRetries) {
          throw new ProviderError(
            `Qdrant ${this.location}: ${operation} failed after ${attempt + 1} attempts: ${detail}`,
            { cause: error, status: typeof status === 'number' ? status : undefined },
          );
        }
        // a server that says when to come back (429, 503 with Retry-After) is taken at its word, up to a minute: the
        // header as the answer carried it (a 503's is on the error; a 429's only as undici received it)
        const retryAfterMs = rateLimited
          ? retryAfterSeen(this.url, began)
          : parseRetryAfter((error as { headers?: Headers }).headers);
        const cap = Math.min(8000, this.retryDelayMs * 2 ** attempt);
        const backoff = cap / 2 + Math.random() * (cap / 2);
        // the client's retry_after is the header's first character only ('20' is 2): never trusted as the wait,
        // but a wait at least that long is never too short
        const clientRetryAfter = (error as { retry_after?: unknown }).retry_after;
        const atLeast =
          typeof clientRetryAfter === 'number' && Number.isFinite(clientRetryAfter)
            ? clientRetryAfter * 1000
            : 0;
        await sleep(
          Math.min(
            MAX_RETRY_AFTER_MS,
            retryAfterMs !== undefined ? retryAfterMs : Math.max(atLeast, backoff),
          ),
        );
      }
    }
  }

  private async exists(name: string): Promise<boolean> {
    const result = await this.call(`collection exists '${name}'`, (client) => client.collectionExists(name));
    return result.exists;
  }

  private async vectorConfig(name: string): Promise<{ size?: number; distance?: string; points: number }> {
    const info = await this.call(`get collection '${name}'`, (client) => client.getCollection(name));
    const vectors = info.config?.params?.vectors as { size?: number; distance?: string } | undefined;
    return { size: vectors?.size, distance: vectors?.distance, points: Number(info.points_count ?? 0) };
  }

  async ensureCollection(
    name: string,
    spec: CollectionSpec,
    options: EnsureCollectionOptions = {},
  ): Promise<void> {
    const key = `${spec.model}|${spec.size}|${spec.distance}`;
    if (this.ensured.get(name) === key) return;
    const stamp = await readStamp(this.db, 'qdrant', name);
    if (!(await this.exists(name))) {
      try {
        await this.call(`create collection '${name}'`, (client) =>
          client.createCollection(name, { vectors: { size: spec.size, distance: spec.distance } }),
        );
      } catch (error) {
        // another worker may have created it a moment ago
        if (!(await this.exists(name))) throw error;
        return this.ensureCollection(name, spec, options);
      }
      if (stamp)
        (options.log ?? this.log).warn(recreatedMessage(name, stamp, this.location), { collection: name });
      await writeStamp(this.db, 'qdrant', name, this.location, spec);
      this.moved.delete(name);
      this.ensured.set(name, key);
      return;
    }
    const config = await this.vectorConfig(name);
    if (config.size !== spec.size || (config.distance && config.distance !== spec.distance)) {
      throw collectionMismatch(
        'qdrant',
        name,
        { model: stamp?.model, dimensions: config.size, distance: config.distance },
        spec,
      );
    }
    if (stamp) {
      checkStamp(stamp, spec);
      await this.checkLocation(name, stamp, options.log ?? this.log);
    } else await this.adopt(name, spec, options.log ?? this.log);
    this.ensured.set(name, key);
  }

  /**
   * A collection of the right size that this data set (its ki_content) has no stamp of is taken on only while it is
   * empty. One with points is another data set's (a second ki_content using this Qdrant) or left over: taken on,
   * `verify --repair` deleted every point of it as an orphan, and runs overwrote its points (point ids come from
   * document ids). One stamped meanwhile was made by another process of this data set, which stamps before it stores.
   */
  private async adopt(name: string, spec: CollectionSpec, log: IndexLog): Promise<void> {
    const points = await this.count(name);
    if (points === 0) return writeStamp(this.db, 'qdrant', name, this.location, spec);
    const stamp = await readStamp(this.db, 'qdrant', name);
    if (!stamp) throw foreignCollection(name, points, this.location);
    checkStamp(stamp, spec);
    await this.checkLocation(name, stamp, log, points);
  }

  /**
   * A stamp that names another Qdrant: this data set made its collection of that name there. The one here is either
   * a copy of it (a snapshot restored on a new host: the data set moved with its points) or another data set's
   * that only has the same name, and trusting the stamp made the second one this data set's: search answered with its
   * points, `verify --repair` deleted them as orphans. Only the points tell the two apart, so a sample of them is
   * looked up in SQL, once per process and collection: a copy is taken on (its stamp names this Qdrant from now on),
   * another data set's is refused as one without a stamp is. An empty collection holds nobody's points: it is used
   * as before.
   */
  private async checkLocation(
    name: string,
    stamp: CollectionStamp,
    log: IndexLog,
    points?: number,
  ): Promise<void> {
    if (stamp.location === this.location) return;
    const count = points ?? (await this.count(name));
    if (count === 0) return;
    let verdict = this.moved.get(name);
    if (!verdict) {
      verdict = this.settleMove(name, stamp, log);
      this.moved.set(name, verdict);
      // a failure to find out (Qdrant or SQL not answering) is no verdict: the next call asks again
      verdict.catch(() => this.moved.delete(name));
    }
    if (!(await verdict)) throw foreignCollection(name, count, this.location, stamp.location);
  }

  /** Takes on a collection stamped at another Qdrant if it holds this data set's points; false if it does not. */
  private async settleMove(name: string, stamp: CollectionStamp, log: IndexLog): Promise<boolean> {
    if (!(await this.holdsOwnPoints(name))) return false;
    await moveStamp(this.db, 'qdrant', name, this.location);
    log.warn(
      `collection '${name}' in Qdrant ${this.location} holds this data set's points, although cpe had made it at ` +
        `${stamp.location}: taken as moved here (copied from there), it is used from now on. If the copy is older ` +
        `than the data set, cpe verify --repair stores what it lacks.`,
      { collection: name, from: stamp.location, to: this.location },
    );
    return true;
  }

  /**
   * Whether any point of a sample of the collection is one this data set stored: the SQL row that names the point
   * (chunks.qdrant_id, entities.qdrant_id) agrees with its payload. The id alone would not do: a chunk's point id
   * comes from its document id and chunk index, an entity's from its name and type, and another data set numbers its
   * documents from 1 as well; so the chunk (chunk_id) and its file (source_path) must match too, and for an entity
   * its id, name and type.
   */
  private async holdsOwnPoints(name: string): Promise<boolean> {
    const page = await this.call(`scroll '${name}'`, (client) =>
      client.scroll(name, {
        limit: OWNERSHIP_SAMPLE,
        with_payload: ['document_id', 'chunk_id', 'source_path', 'entity_id', 'name', 'type'],
        with_vector: false,
      }),
    );
    const sample = page.points.map((p) => ({
      id: String(p.id).toLowerCase(),
      payload: (p.payload ?? {}) as Record<string, unknown>,
    }));
    // emptied since it was counted: nobody's points to protect, as with an empty collection
    if (sample.length === 0) return true;
    const ids = (field: string) => [
      ...new Set(
        sample.map((p) => Number(p.payload[field])).filter((id) => Number.isSafeInteger(id) && id > 0),
      ),
    ];
    const names = (qdrantId: unknown) => (qdrantId === null ? undefined : String(qdrantId).toLowerCase());
    if (name === ENTITY_COLLECTION) {
      const entityIds = ids('entity_id');
      if (entityIds.length === 0) return false;
      const list = inList(entityIds);
      const rows = await this.db.query<{ id: number; name: string; type: string; qdrant_id: string | null }>(
        `SELECT id, name, type, qdrant_id FROM entities WHERE id IN (${list.marks})`,
        list.values,
      );
      const byId = new Map(rows.map((row) => [Number(row.id), row]));
      return sample.some((p) => {
        const row = byId.get(Number(p.payload.entity_id));
        return (
          row !== undefined &&
          names(row.qdrant_id) === p.id &&
          row.name === p.payload.name &&
          row.type === p.payload.type
        );
      });
    }
    const documentIds = ids('document_id');
    if (documentIds.length === 0) return false;
    const list = inList(documentIds);
    const rows = await this.db.query<{
      id: number;
      document_id: number;
      qdrant_id: string | null;
      source_path: string;
    }>(
      `SELECT c.id, c.document_id, c.qdrant_id, d.source_path
       FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.document_id IN (${list.marks})`,
      list.values,
    );
    const byPoint = new Map(rows.map((row) => [names(row.qdrant_id), row]));
    return sample.some((p) => {
      const row = byPoint.get(p.id);
      const chunkId = p.payload.chunk_id;
      return (
        row !== undefined &&
        Number(row.document_id) === Number(p.payload.document_id) &&
        row.source_path === p.payload.source_path &&
        // listPoints and verify take a point without chunk_id too: it is matched by id, document and file
        (typeof chunkId !== 'number' || chunkId === Number(row.id))
      );
    });
  }

  /**
   * Refuses a collection with points that this data set did not make, for every caller: search would answer with
   * another data set's chunks, and verify would count its points as orphans (and delete them with --repair).
   */
  async describeCollection(name: string): Promise<CollectionInfo> {
    if (!(await this.exists(name))) {
      this.ensured.delete(name);
      this.moved.delete(name);
      return { name, exists: false, points: 0 };
    }
    const [config, stamp, points] = await Promise.all([
      this.vectorConfig(name),
      readStamp(this.db, 'qdrant', name),
      this.count(name),
    ]);
    if (!stamp && points > 0) throw foreignCollection(name, points, this.location);
    if (stamp) await this.checkLocation(name, stamp, this.log, points);
    return {
      name,
      exists: true,
      model: stamp?.model,
      dimensions: config.size,
      distance: config.distance,
      points,
    };
  }

  async upsert(collection: string, points: readonly VectorPoint[]): Promise<void> {
    for (let start = 0; start < points.length; start += this.upsertBatch) {
      const slice = points.slice(start, start + this.upsertBatch).map((p) => ({
        id: p.id,
        vector: Array.from(p.vector),
        payload: p.payload,
      }));
      try {
        await this.call(`upsert ${slice.length} points into '${collection}'`, (client) =>
          client.upsert(collection, { wait: true, points: slice }),
        );
      } catch (error) {
        // the collection was dropped behind this process's back: ensure it again on the next attempt. Every caller
        // that meets the 404 fails retryable, not only the first to forget it (documents store points concurrently)
        if (statusOf(error) === 404) {
          this.ensured.delete(collection);
          throw new ProviderError(
            `Qdrant ${this.location}: collection '${collection}' disappeared; it is created again on retry`,
            { cause: error, retryable: true },
          );
        }
        throw error;
      }
    }
  }

  async deleteByDocument(
    collection: string,
    documentId: number,
    options: { keepIds?: readonly string[] } = {},
  ): Promise<void> {
    const keep = options.keepIds ?? [];
    const filter: Record<string, unknown> = { must: [{ key: 'document_id', match: { value: documentId } }] };
    if (keep.length > 0) filter.must_not = [{ has_id: [...keep] }];
    await this.ignoreMissingCollection(
      collection,
      this.call(`delete points of document ${documentId} from '${collection}'`, (client) =>
        client.delete(collection, { wait: true, filter: filter as any }),
      ),
    );
  }

  async deletePoints(collection: string, ids: readonly string[]): Promise<void> {
    for (let start = 0; start < ids.length; start += DELETE_BATCH) {
      // Qdrant's ids are UUIDs or unsigned integers; listPoints gives both as text, an integer is sent as one
      const slice = ids.slice(start, start + DELETE_BATCH).map((id) => (/^\d+$/.test(id) ? Number(id) : id));
      await this.ignoreMissingCollection(
        collection,
        this.call(`delete ${slice.length} points from '${collection}'`, (client) =>
          client.delete(collection, { wait: true, points: slice }),
        ),
      );
    }
  }

  async search(
    collection: string,
    vector: Float32Array,
    options: { limit: number; documentIds?: readonly number[] },
  ): Promise<VectorSearchResult[]> {
    const filter = options.documentIds
      ? { must: [{ key: 'document_id', match: { any: [...options.documentIds] } }] }
      : undefined;
    const result = await this.call(`query '${collection}'`, (client) =>
      client.query(collection, {
        query: Array.from(vector),
        limit: options.limit,
        filter,
        with_payload: true,
      }),
    );
    return result.points.map((p) => ({
      id: String(p.id),
      score: clampCosine(p.score),
      payload: (p.payload ?? {}) as Record<string, unknown>,
    }));
  }

  async listPoints(collection: string): Promise<PointRef[]> {
    const out: PointRef[] = [];
    let offset: string | number | undefined | null;
    do {
      const page = await this.call(`scroll '${collection}'`, (client) =>
        client.scroll(collection, {
          limit: SCROLL_PAGE,
          offset: offset ?? undefined,
          with_payload: ['document_id', 'chunk_id'],
          with_vector: false,
        }),
      );
      for (const p of page.points) {
        const chunkId = p.payload?.chunk_id;
        out.push({
          id: String(p.id),
          documentId: Number(p.payload?.document_id),
          ...(typeof chunkId === 'number' && { chunkId }),
        });
      }
      offset = page.next_page_offset as string | number | null | undefined;
    } while (offset !== null && offset !== undefined);
    return out;
  }

  async count(collection: string): Promise<number> {
    const result = await this.call(`count '${collection}'`, (client) =>
      client.count(collection, { exact: true }),
    );
    return result.count;
  }

  async optimize(collection: string): Promise<string[]> {
    const done: string[] = [];
    for (const index of PAYLOAD_INDEXES) {
      await this.call(`create payload index ${index.field} on '${collection}'`, (client) =>
        client.createPayloadIndex(collection, {
          field_name: index.field,
          field_schema: index.schema,
          wait: true,
        }),
      );
      done.push(`payload index ${collection}.${index.field} (${index.schema})`);
    }
    return done;
  }

  async dropCollection(name: string): Promise<void> {
    if (await this.exists(name)) {
      await this.call(`delete collection '${name}'`, (client) => client.deleteCollection(name));
    }
    await deleteStamp(this.db, 'qdrant', name);
    this.ensured.delete(name);
    this.moved.delete(name);
  }

  /**
   * Deleting from a collection that does not exist leaves nothing behind: not an error. The collection is forgotten
   * as ensured, so that the next upsert makes it again.
   */
  private async ignoreMissingCollection(collection: string, operation: Promise<unknown>): Promise<void> {
    try {
      await operation;
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      this.ensured.delete(collection);
    }
  }

  async close(): Promise<void> {}
}

/**
 * The refusal of a collection with points that this data set has no stamp of (or a stamp of another Qdrant, `madeAt`,
 * while none of the points is its own), saying what to do: a collection of its own under another name, the Qdrant
 * it made its collection in, or deleting this one when it is really left over. A configuration error (exit 2).
 */
function foreignCollection(name: string, points: number, location: string, madeAt?: string): CpeError {
  const rename =
    name === ENTITY_COLLECTION
      ? `the name of the '${ENTITY_COLLECTION}' collection is fixed: give this data set a Qdrant of its own (CPE_QDRANT_URL)`
      : `give this data set a collection of its own: set config.collection on the pipeline's embed step and on its ` +
        `vector_store step (if it has one), and put the new name in place of '${name}' in config.collections of its ` +
        'collection_setup and index_optimize steps; or give it a Qdrant of its own (CPE_QDRANT_URL)';
  // the stamp says where this data set's own collection of that name is: perhaps CPE_QDRANT_URL names the wrong one
  const made =
    madeAt === undefined
      ? ''
      : ` (it made its collection '${name}' in Qdrant ${madeAt}, and none of the points looked at here is one of its own)`;
  const back =
    madeAt === undefined ? '' : `set CPE_QDRANT_URL to ${madeAt} again if that is the one meant; or `;
  return new CpeError(
    ErrorCodes.COLLECTION_MISMATCH,
    `collection '${name}' in Qdrant ${location} holds ${points} point${points === 1 ? '' : 's'}, but this data set (its ki_content database) ` +
      `did not make it${made}: it belongs to another data set using this Qdrant, or is left over. cpe leaves it alone ` +
      `(verify --repair would delete its points, a run would overwrite them). To go on, ${back}${rename}. Only if the ` +
      `collection is really left over: delete it in Qdrant (DELETE ${location}/collections/${name}), then run ` +
      "cpe verify --repair to store this data set's points.",
    {
      details: {
        collection: name,
        backend: 'qdrant',
        location,
        points,
        ...(madeAt !== undefined && { madeAt }),
      },
    },
  );
}

/** A 429 with a Retry-After as the client throws it: its own error, or its failure to read an HTTP date. */
function isRateLimited(error: unknown): boolean {
  const name = (error as Error | null)?.name;
  return (
    name === 'QdrantClientResourceExhaustedError' ||
    (error instanceof Error && error.message.startsWith('Invalid retryAfter value:'))
  );
}

/**
 * The warning for a collection cpe had made (its stamp is in SQL) found missing: made again, it is empty, so the
 * points stored in it before are gone until `cpe verify --repair` restores them from SQL. Restoring them here would
 * take what verify does (which documents are the collection's, their vectors, the entities), in the middle of
 * another document's step: the warning names the command instead.
 */
function recreatedMessage(name: string, stamp: CollectionStamp, location: string): string {
  const where = stamp.location === location ? '' : ` (cpe had made it at ${stamp.location})`;
  // the entities collection is checked and repaired along with the documents collection, not as one of chunks
  const repair =
    name === ENTITY_COLLECTION
      ? 'cpe verify --repair (it restores the entity points too)'
      : `cpe verify --repair --collection=${name}`;
  return (
    `collection '${name}' was missing in Qdrant ${location} although cpe had made it${where}: it was deleted or ` +
    `lost behind cpe's back. It is made again, empty: the points stored in it before are gone, and search does not ` +
    `find their documents until they are restored from SQL: ${repair}`
  );
}

/** The HTTP status behind a wrapped client error, if any. */
function statusOf(error: unknown): number | undefined {
  const status = (error as { cause?: { status?: unknown } }).cause?.status;
  return typeof status === 'number' ? status : undefined;
}

/** The server's own message when it sent one ({status:{error}}), else the client's. */
function describeQdrantError(error: unknown): string {
  const data = (error as { data?: { status?: { error?: string } } }).data;
  const serverMessage = data?.status?.error;
  const status = (error as { status?: number }).status;
  const base = serverMessage ?? (error as Error).message ?? String(error);
  const code = (error as { cause?: { code?: string } }).cause?.code;
  return [status ? `HTTP ${status}` : undefined, base, code].filter(Boolean).join(': ');
}

export function isCollectionMismatch(error: unknown): boolean {
  return error instanceof CpeError && error.code === ErrorCodes.COLLECTION_MISMATCH;
}
