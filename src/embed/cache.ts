import type { SqlExecutor } from '../db/sql.js';
import { inLists, rowSlices } from '../db/statement-shapes.js';
import { sha256 } from '../util/hash.js';
import { blobToVector, vectorToBlob } from './vector-blob.js';

/** The cache key of a prepared text. */
export const textHash = (preparedText: string): string => sha256(preparedText);

/** Multi-row INSERTs are cut at this many rows (MySQL's packet size: a 1024-dim vector is 4 KB). */
const ROWS_PER_STATEMENT = 200;

/**
 * Vectors by (model, SHA-256 of the prepared text) in ki_content.embedding_cache: a rerun, an unchanged chunk
 * or the same paragraph in two documents never reaches the embedder again. embedChunks stores them at unit
 * length, and the embedded index's chunk points refer to these rows (vector_points.vector_model, text_hash)
 * instead of holding a copy: each vector is stored once. A row a point refers to is that point's vector.
 */
export class EmbeddingCache {
  constructor(private readonly db: SqlExecutor) {}

  /** The cached vectors among `hashes` for this model and size (rows of another size are ignored). */
  async getMany(
    model: string,
    hashes: readonly string[],
    dimensions?: number,
  ): Promise<Map<string, Float32Array>> {
    const found = new Map<string, Float32Array>();
    const unique = [...new Set(hashes)];
    for (const list of inLists(unique)) {
      const rows = await this.db.query<{ text_hash: string; dimensions: number; vector: Uint8Array }>(
        `SELECT text_hash, dimensions, vector FROM embedding_cache WHERE model = ? AND text_hash IN (${list.marks})`,
        [model, ...list.values],
      );
      for (const row of rows) {
        if (dimensions !== undefined && Number(row.dimensions) !== dimensions) continue;
        found.set(row.text_hash, blobToVector(row.vector));
      }
    }
    return found;
  }

  /** Stores vectors; an existing entry for the same key is replaced (same text, same model: same vector). */
  async putMany(
    model: string,
    entries: ReadonlyArray<{ hash: string; vector: Float32Array }>,
    db?: SqlExecutor,
  ) {
    const exec = db ?? this.db;
    const unique = [...new Map(entries.map((e) => [e.hash, e])).values()];
    for (const slice of rowSlices(exec.dialect, unique, ROWS_PER_STATEMENT)) {
      const values = slice.map(() => '(?, ?, ?, ?)').join(', ');
      const params = slice.flatMap((e) => [model, e.hash, e.vector.length, vectorToBlob(e.vector)]);
      const upsert =
        exec.dialect === 'mysql'
          ? `INSERT INTO embedding_cache (model, text_hash, dimensions, vector) VALUES ${values}
             ON DUPLICATE KEY UPDATE dimensions = VALUES(dimensions), vector = VALUES(vector)`
          : `INSERT INTO embedding_cache (model, text_hash, dimensions, vector) VALUES ${values}
             ON CONFLICT (model, text_hash) DO UPDATE SET dimensions = excluded.dimensions, vector = excluded.vector`;
      await exec.run(upsert, params);
    }
  }
}
