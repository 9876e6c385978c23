import type { SqlExecutor } from '../db/sql.js';
import { QdrantVectorIndex } from './qdrant-vector-index.js';
import { SqlVectorIndex } from './sql-vector-index.js';
import type { IndexLog, VectorIndex } from './types.js';

export interface VectorIndexSettings {
  /** CPE_QDRANT_URL; unset = vectors in ki_content (the embedded index) */
  qdrantUrl?: string;
  /** QDRANT_API_KEY */
  qdrantApiKey?: string;
  /** ki_content: holds the collection stamps, and the points of the embedded index */
  db: SqlExecutor;
  /** shown as the embedded index's location, e.g. the content database's masked location */
  dbLocation?: string;
  timeoutMs?: number;
  maxRetries?: number;
  /** where the index's warnings go when a call brings no logger (default: standard error) */
  log?: IndexLog;
}

export function createVectorIndex(settings: VectorIndexSettings): VectorIndex {
  if (settings.qdrantUrl) {
    return new QdrantVectorIndex({
      url: settings.qdrantUrl,
      apiKey: settings.qdrantApiKey,
      db: settings.db,
      timeoutMs: settings.timeoutMs,
      maxRetries: settings.maxRetries,
      log: settings.log,
    });
  }
  return new SqlVectorIndex(settings.db, settings.dbLocation);
}
