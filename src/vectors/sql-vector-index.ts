import type { SqlExecutor } from '../db/sql.js';
import { inLists, rowSlices } from '../db/statement-shapes.js';
import { normalizeVector, unitVector, vectorToBlob } from '../embed/vector-blob.js';
import { CpeError, ErrorCodes } from '../errors.js';
import { parseJsonColumn } from '../util/json.js';
import { clampCosine } from './clamp-cosine.js';
import { checkStamp, deleteStamp, readStamp, writeStamp } from './collection-stamp.js';
import { SimdMatrix } from './simd-scores.js';
import type {
  CollectionInfo,
  CollectionSpec,
  PointRef,
  VectorIndex,
  VectorPoint,
  VectorSearchResult,
} from './types.js';

const WRITE_BATCH = 100;
const POINT_COLUMNS =
  'collection, point_id, document_id, chunk_id, vector, vector_model, text_hash, payload, content_chars';
const LOAD_PAGE = 5000;

/**
 * One collection held in memory: all vectors packed row by row in one Float32Array (unit length, so a search is
 * one pass of dot products), the point ids and document ids beside it.
 */
class PackedCollection {
  ids: string[] = [];
  documentIds: number[] = [];
  matrix: Float32Array;
  /** the same matrix in WebAssembly memory, scored with SIMD, when available */
  private simd: SimdMatrix | undefined;
  readonly rowOf = new Map<string, number>();

  constructor(
    readonly dimensions: number,
    public revision: number,
    capacity = 1024,
  ) {
    this.matrix = this.allocate(Math.max(1, capacity));
  }

  private allocate(rows: number): Float32Array {
    this.simd = SimdMatrix.create(rows, this.dimensions);
    return this.simd?.matrix ?? new Float32Array(rows * this.dimensions);
  }

  get size(): number {
    return this.ids.length;
  }

  set(id: string, documentId: number, vector: Float32Array | Uint8Array): void {
    let row = this.rowOf.get(id);
    if (row === undefined) {
      row = this.ids.length;
      if ((row + 1) * this.dimensions > this.matrix.length) {
        const old = this.matrix.subarray(0, row * this.dimensions);
        const grown = this.allocate(Math.ceil((row + 1) * 1.5));
        grown.set(old);
        this.matrix = grown;
      }
      this.ids.push(id);
      this.documentIds.push(documentId);
      this.rowOf.set(id, row);
    } else {
      this.documentIds[row] = documentId;
    }
    if (vector instanceof Float32Array) {
      this.matrix.set(vector, row * this.dimensions);
    } else {
      // raw BLOB bytes: copy byte-wise into the aligned matrix, no intermediate array
      new Uint8Array(this.matrix.buffer, row * this.dimensions * 4, this.dimensions * 4).set(vector);
    }
  }

  /** removes by moving the last row into the hole */
  remove(id: string): void {
    const row = this.rowOf.get(id);
    if (row === undefined) return;
    const last = this.ids.length - 1;
    if (row !== last) {
      const lastId = this.ids[last];
      this.ids[row] = lastId;
      this.documentIds[row] = this.documentIds[last];
      this.matrix.copyWithin(row * this.dimensions, last * this.dimensions, (last + 1) * this.dimensions);
      this.rowOf.set(lastId, row);
    }
    this.ids.pop();
    this.documentIds.pop();
    this.rowOf.delete(id);
  }

  /**
   * The `limit` best rows by dot product with q (unit length), optionally only rows of some documents, and every
   * further row tied with the last of them: which of equal scores make the cut must not depend on the order the
   * rows were loaded in (rowid on SQLite, point id on MariaDB), so the caller, who knows more of each row, decides.
   */
  top(q: Float32Array, limit: number, allowed?: ReadonlySet<number>): Array<{ row: number; score: number }> {
    const d = this.dimensions;
    const m = this.matrix;
    const n = this.ids.length;
    // a small sorted list beats a heap for the limits a search uses (10-100)
    const bestRows: number[] = [];
    const bestScores: number[] = [];
    let floor = -Infinity;
    const keep = (row: number, score: number) => {
      // NaN (a vector that was never a number) is no score: as the floor it would let no better row in
      if (bestRows.length >= limit && score < floor) return;
      if (Number.isNaN(score)) return;
      let at = bestScores.length;
      while (at > 0 && bestScores[at - 1] < score) at--;
      bestScores.splice(at, 0, score);
      bestRows.splice(at, 0, row);
      if (bestRows.length < limit) return;
      floor = bestScores[limit - 1];
      // rows below the new floor drop out; those tied with it stay
      let end = bestRows.length;
      while (end > limit && bestScores[end - 1] < floor) end--;
      bestRows.length = end;
      bestScores.length = end;
    };
    if (this.simd) {
      const scores = this.simd.scores(q, n);
      for (let row = 0; row < n; row++) {
        const score = scores[row];
        if (score < floor && bestRows.length >= limit) continue;
        if (allowed && !allowed.has(this.documentIds[row])) continue;
        keep(row, score);
      }
      return bestRows.map((row, k) => ({ row, score: clampCosine(bestScores[k]) }));
    }
    for (let row = 0; row < n; row++) {
      if (allowed && !allowed.has(this.documentIds[row])) continue;
      let base = row * d;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let i = 0;
      for (; i + 3 < d; i += 4, base += 4) {
        s0 += m[base] * q[i];
        s1 += m[base + 1] * q[i + 1];
        s2 += m[base + 2] * q[i + 2];
        s3 += m[base + 3] * q[i + 3];
      }
      for (; i < d; i++, base++) s0 += m[base] * q[i];
      keep(row, s0 + s1 + s2 + s3);
    }
    return bestRows.map((row, k) => ({ row, score: clampCosine(bestScores[k]) }));
  }
}

/**
 * The embedded vector index: points in ki_content.vector_points (SQLite or MariaDB, through SqlExecutor), vectors
 * as unit-length float32 BLOBs, exact cosine search in process over a packed matrix loaded once per collection
 * and kept current on this process's writes. A point whose vector is an embedding_cache row (a chunk's, see
 * VectorPoint.cached) refers to that row instead of holding a second copy; other points hold their vector.
 * Writes by other processes bump the collection's revision; a search that sees a newer revision reloads.
 */
export class SqlVectorIndex implements VectorIndex {
  readonly kind = 'embedded' as const;
  readonly location: string;
  private readonly memory = new Map<string, PackedCollection>();
  private readonly loading = new Map<string, Promise<PackedCollection>>();
  private readonly creating = new Map<string, Promise<void>>();
  /**
   * Collections whose stamp this index found matching a spec (model|size|distance), as the Qdrant index keeps
   * them: a document's points do not read the stamp again. A write's guard still checks the size, and forgets the
   * collection when it is gone or rebuilt.
   */
  private readonly ensured = new Map<string, string>();

  private readonly loadPage: number;

  constructor(
    private readonly db: SqlExecutor,
    location?: string,
    options: { loadPageSize?: number } = {},
  ) {
    this.location = location ?? `${db.dialect}:ki_content`;
    this.loadPage = options.loadPageSize ?? LOAD_PAGE;
  }

  async ensureCollection(name: string, spec: CollectionSpec): Promise<void> {
    const key = `${spec.model}|${spec.size}|${spec.distance}`;
    if (this.ensured.get(name) === key) return;
    await this.checkOrCreate(name, spec);
    this.ensured.set(name, key);
  }

  private async checkOrCreate(name: string, spec: CollectionSpec): Promise<void> {
    const stamp = await readStamp(this.db, 'embedded', name);
    if (stamp) return checkStamp(stamp, spec);
    // documents processed concurrently all find the collection missing: one of them creates it
    let creating = this.creating.get(name);
    if (!creating) {
      creating = this.createStamp(name, spec).finally(() => this.creating.delete(name));
      this.creating.set(name, creating);
    }
    await creating;
    const created = await readStamp(this.db, 'embedded', name);
    if (created) checkStamp(created, spec);
  }

  private async createStamp(name: string, spec: CollectionSpec): Promise<void> {
    try {
      await writeStamp(this.db, 'embedded', name, this.location, spec);
    } catch (error) {
      // another process created it at the same moment (duplicate key): the caller checks that stamp
      if (!(await readStamp(this.db, 'embedded', name))) throw error;
    }
  }

  async describeCollection(name: string): Promise<CollectionInfo> {
    const stamp = await readStamp(this.db, 'embedded', name);
    if (!stamp) return { name, exists: false, points: 0 };
    return {
      name,
      exists: true,
      model: stamp.model,
      dimensions: stamp.dimensions,
      distance: stamp.distance,
      points: await this.count(name),
    };
  }

  /** Why a write of vectors of `dimensions` to `collection` cannot go ahead (read when the write's guard failed). */
  private async stampProblem(db: SqlExecutor, collection: string, dimensions: number): Promise<CpeError> {
    const stamp = await readStamp(db, 'embedded', collection);
    if (!stamp) {
      return new CpeError(
        ErrorCodes.COLLECTION_MISMATCH,
        `collection '${collection}' does not exist in the embedded index (collection_setup, embed or vector_store creates it)`,
      );
    }
    return new CpeError(
      ErrorCodes.COLLECTION_MISMATCH,
      `${dimensions}-dimensional vectors for collection '${collection}' of ${stamp.dimensions} dimensions`,
    );
  }

  /**
   * Runs a write and bumps the collection's revision in the same transaction, then applies the write to the loaded
   * matrix if there is one. For a write of vectors (`dimensions` given) the bump is its guard too: it matches only
   * an existing collection of that size, so a collection missing, or dropped and rebuilt with another size
   * meanwhile, rolls the write back.
   * The new revision is read back only when this process holds the collection's matrix: an ingestion run that
   * has not searched saves that statement per write.
   */
  private async write(
    collection: string,
    work: (tx: SqlExecutor) => Promise<void>,
    apply: (packed: PackedCollection) => void,
    dimensions?: number,
  ): Promise<void> {
    const revision = await this.db.transaction(async (tx) => {
      await work(tx);
      const bumped = await tx.run(
        `UPDATE vector_collections SET revision = revision + 1 WHERE backend = 'embedded' AND name = ?${
          dimensions === undefined ? '' : ' AND dimensions = ?'
        }`,
        dimensions === undefined ? [collection] : [collection, dimensions],
      );
      if (bumped.affectedRows === 0 && dimensions !== undefined) {
        this.ensured.delete(collection); // dropped or rebuilt by someone else: the next ensureCollection looks again
        throw await this.stampProblem(tx, collection, dimensions);
      }
      if (!this.memory.has(collection)) return undefined;
      const [row] = await tx.query<{ revision: number }>(
        `SELECT revision FROM vector_collections WHERE backend = 'embedded' AND name = ?`,
        [collection],
      );
      return Number(row?.revision ?? 0);
    });
    const packed = this.memory.get(collection);
    if (!packed) return;
    if (revision !== undefined && packed.revision === revision - 1) {
      apply(packed);
      packed.revision = revision;
    } else {
      this.memory.delete(collection); // someone else wrote in between, or it was loaded meanwhile: reload on the next search
    }
  }

  async upsert(collection: string, points: readonly VectorPoint[]): Promise<void> {
    if (points.length === 0) return;
    // the collection's size is checked by the write's guard; here the points have to agree with each other
    const dimensions = points[0]!.vector.length;
    const rows = points.map((p) => {
      if (p.vector.length !== dimensions) {
        throw new CpeError(
          ErrorCodes.COLLECTION_MISMATCH,
          `point ${p.id}: ${p.vector.length}-dimensional vector among points of ${dimensions} dimensions for collection '${collection}'`,
        );
      }
      const documentId = Number(p.payload.document_id);
      if (!Number.isInteger(documentId)) {
        throw new CpeError(ErrorCodes.STEP_FAILED, `point ${p.id}: payload.document_id must be an integer`);
      }
      const chunkId = p.payload.chunk_id === undefined ? null : Number(p.payload.chunk_id);
      const vector = unitVector(p.vector);
      // a unit vector that is an embedding_cache row is stored as a reference to it, not a second time
      const cached = vector === p.vector ? p.cached : undefined;
      // a chunk's text is in chunks.content: the payload keeps its length only and search reads it from there
      const contentChars =
        p.contentFromChunk && chunkId !== null && typeof p.payload.content === 'string'
          ? p.payload.content.length
          : null;
      const payload = contentChars === null ? p.payload : { ...p.payload, content: undefined };
      return {
        id: p.id,
        documentId,
        chunkId,
        vector,
        cached,
        contentChars,
        payload: JSON.stringify(payload),
      };
    });
    await this.write(
      collection,
      async (tx) => {
        for (const slice of rowSlices(tx.dialect, rows, WRITE_BATCH)) {
          const values = slice.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
          const params = slice.flatMap((r) => [
            collection,
            r.id,
            r.documentId,
            r.chunkId,
            r.cached ? null : vectorToBlob(r.vector),
            r.cached?.model ?? null,
            r.cached?.textHash ?? null,
            r.payload,
            r.contentChars,
          ]);
          const sql =
            tx.dialect === 'mysql'
              ? `INSERT INTO vector_points (${POINT_COLUMNS}) VALUES ${values}
                 ON DUPLICATE KEY UPDATE document_id = VALUES(document_id), chunk_id = VALUES(chunk_id),
                 vector = VALUES(vector), vector_model = VALUES(vector_model), text_hash = VALUES(text_hash),
                 payload = VALUES(payload), content_chars = VALUES(content_chars)`
              : `INSERT INTO vector_points (${POINT_COLUMNS}) VALUES ${values}
                 ON CONFLICT (collection, point_id) DO UPDATE SET document_id = excluded.document_id,
                 chunk_id = excluded.chunk_id, vector = excluded.vector, vector_model = excluded.vector_model,
                 text_hash = excluded.text_hash, payload = excluded.payload, content_chars = excluded.content_chars,
                 updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now')`;
          await tx.run(sql, params);
        }
      },
      (packed) => {
        for (const r of rows) packed.set(r.id, r.documentId, r.vector);
      },
      dimensions,
    );
  }

  async deleteByDocument(
    collection: string,
    documentId: number,
    options: { keepIds?: readonly string[] } = {},
  ): Promise<void> {
    const keep = new Set(options.keepIds ?? []);
    const existing = await this.db.query<{ point_id: string }>(
      'SELECT point_id FROM vector_points WHERE collection = ? AND document_id = ?',
      [collection, documentId],
    );
    const doomed = existing.map((r) => r.point_id).filter((id) => !keep.has(id));
    await this.deletePoints(collection, doomed);
  }

  async deletePoints(collection: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const stamp = await readStamp(this.db, 'embedded', collection);
    if (!stamp) return;
    await this.write(
      collection,
      async (tx) => {
        for (const list of inLists(ids)) {
          await tx.run(`DELETE FROM vector_points WHERE collection = ? AND point_id IN (${list.marks})`, [
            collection,
            ...list.values,
          ]);
        }
      },
      (packed) => {
        for (const id of ids) packed.remove(id);
      },
    );
  }

  /** The collection's matrix, loaded on first use and reloaded when another process has written since. */
  private async packed(collection: string): Promise<PackedCollection | undefined> {
    const stamp = await readStamp(this.db, 'embedded', collection);
    if (!stamp) {
      this.memory.delete(collection);
      return undefined;
    }
    const current = this.memory.get(collection);
    if (current && current.revision === stamp.revision && current.dimensions === stamp.dimensions)
      return current;
    let pending = this.loading.get(collection);
    if (!pending) {
      pending = this.load(collection, stamp.dimensions).finally(() => this.loading.delete(collection));
      this.loading.set(collection, pending);
    }
    return pending;
  }

  private async load(collection: string, dimensions: number): Promise<PackedCollection> {
    // the revision is read first: a write landing during the load makes the next search reload again
    const [row] = await this.db.query<{ revision: number }>(
      `SELECT revision FROM vector_collections WHERE backend = 'embedded' AND name = ?`,
      [collection],
    );
    const [{ n }] = await this.db.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM vector_points WHERE collection = ?',
      [collection],
    );
    const packed = new PackedCollection(dimensions, Number(row?.revision ?? 0), Number(n) + 16);
    // pages in storage order: SQLite by rowid (a sequential scan), InnoDB by its clustered primary key
    const sqlite = this.db.dialect === 'sqlite';
    const key = sqlite ? 'vp.rowid' : 'vp.point_id';
    let after: string | number = sqlite ? -1 : '';
    for (;;) {
      const page = await this.db.query<{
        k: string | number;
        point_id: string;
        document_id: number;
        vector: Uint8Array | null;
      }>(
        `SELECT ${key} AS k, vp.point_id, vp.document_id, COALESCE(vp.vector, ec.vector) AS vector
         FROM vector_points vp
         LEFT JOIN embedding_cache ec ON ec.model = vp.vector_model AND ec.text_hash = vp.text_hash
         WHERE vp.collection = ? AND ${key} > ? ORDER BY ${key} LIMIT ?`,
        [collection, after, this.loadPage],
      );
      for (const p of page) {
        // a wrong-size or missing vector (its cache row deleted) is reported by verify, not searched
        if (!p.vector || p.vector.byteLength !== dimensions * 4) continue;
        packed.set(p.point_id, Number(p.document_id), p.vector);
      }
      if (page.length < this.loadPage) break;
      after = page[page.length - 1].k;
    }
    this.memory.set(collection, packed);
    return packed;
  }

  /** The `limit` best points, and any further ones tied with the last of them (see PackedCollection.top). */
  async search(
    collection: string,
    vector: Float32Array,
    options: { limit: number; documentIds?: readonly number[] },
  ): Promise<VectorSearchResult[]> {
    const packed = await this.packed(collection);
    if (!packed || packed.size === 0 || options.limit <= 0) return [];
    if (vector.length !== packed.dimensions) {
      throw new CpeError(
        ErrorCodes.COLLECTION_MISMATCH,
        `query vector has ${vector.length} dimensions, collection '${collection}' ${packed.dimensions}`,
      );
    }
    const allowed = options.documentIds ? new Set(options.documentIds.map(Number)) : undefined;
    const best = packed.top(normalizeVector(vector), options.limit, allowed);
    if (best.length === 0) return [];
    const ids = best.map((b) => packed.ids[b.row]);
    const rows: Array<{
      point_id: string;
      payload: string;
      content_chars: number | null;
      chunk_content: string | null;
    }> = [];
    for (const list of inLists(ids)) {
      rows.push(
        ...(await this.db.query<(typeof rows)[number]>(
          `SELECT vp.point_id, vp.payload, vp.content_chars, c.content AS chunk_content
           FROM vector_points vp LEFT JOIN chunks c ON c.id = vp.chunk_id AND vp.content_chars IS NOT NULL
           WHERE vp.collection = ? AND vp.point_id IN (${list.marks})`,
          [collection, ...list.values],
        )),
      );
    }
    const payloads = new Map(
      rows.map((r) => {
        const payload = parseJsonColumn<Record<string, unknown>>(r.payload, {});
        if (r.content_chars !== null && r.chunk_content !== null)
          payload.content = r.chunk_content.slice(0, Number(r.content_chars));
        return [r.point_id, payload];
      }),
    );
    return best
      .map((b, k) => ({ id: ids[k], score: b.score, payload: payloads.get(ids[k]) }))
      .filter((r): r is VectorSearchResult => r.payload !== undefined);
  }

  async listPoints(collection: string): Promise<PointRef[]> {
    const rows = await this.db.query<{ point_id: string; document_id: number; chunk_id: number | null }>(
      'SELECT point_id, document_id, chunk_id FROM vector_points WHERE collection = ?',
      [collection],
    );
    return rows.map((r) => ({
      id: r.point_id,
      documentId: Number(r.document_id),
      ...(r.chunk_id !== null && r.chunk_id !== undefined && { chunkId: Number(r.chunk_id) }),
    }));
  }

  /**
   * Points whose vector does not have the collection's size (only possible after manual edits), or that refer
   * to an embedding_cache row that is gone.
   */
  async wrongSizePoints(collection: string, dimensions: number): Promise<string[]> {
    const length = this.db.dialect === 'mysql' ? 'LENGTH' : 'length';
    const rows = await this.db.query<{ point_id: string }>(
      `SELECT vp.point_id FROM vector_points vp
       LEFT JOIN embedding_cache ec ON ec.model = vp.vector_model AND ec.text_hash = vp.text_hash
       WHERE vp.collection = ? AND COALESCE(${length}(COALESCE(vp.vector, ec.vector)), 0) <> ?`,
      [collection, dimensions * 4],
    );
    return rows.map((r) => r.point_id);
  }

  async count(collection: string): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM vector_points WHERE collection = ?',
      [collection],
    );
    return Number(row?.n ?? 0);
  }

  async optimize(collection: string): Promise<string[]> {
    if (this.db.dialect === 'mysql') {
      await this.db.query('ANALYZE TABLE vector_points');
      await this.db.query('ANALYZE TABLE embedding_cache');
      return [`ANALYZE TABLE vector_points, embedding_cache (collection '${collection}')`];
    }
    await this.db.run('ANALYZE vector_points');
    await this.db.run('ANALYZE embedding_cache');
    await this.db.run('PRAGMA optimize');
    return [`ANALYZE vector_points, embedding_cache; PRAGMA optimize (collection '${collection}')`];
  }

  async dropCollection(name: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run('DELETE FROM vector_points WHERE collection = ?', [name]);
      await deleteStamp(tx, 'embedded', name);
    });
    this.memory.delete(name);
    this.ensured.delete(name);
  }

  async close(): Promise<void> {
    this.memory.clear();
  }
}
