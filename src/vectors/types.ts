/** What a collection holds: vectors of one size from one model, compared by one distance. */
export interface CollectionSpec {
  size: number;
  distance: 'Cosine';
  /** the embedding model (stamped on the collection; a different model is refused) */
  model: string;
}

export interface VectorPoint {
  id: string;
  vector: Float32Array;
  payload: Record<string, unknown>;
  /**
   * The embedding_cache row that holds exactly this vector, when there is one: the embedded index then stores
   * a reference instead of a second copy. Qdrant ignores it.
   */
  cached?: { model: string; textHash: string };
  /**
   * payload.content is the beginning of chunks.content of payload.chunk_id: the embedded index reads it from
   * there when it returns the payload instead of storing the text a second time. Qdrant ignores it.
   */
  contentFromChunk?: boolean;
}

export interface VectorSearchResult {
  id: string;
  /** cosine similarity, higher is closer */
  score: number;
  payload: Record<string, unknown>;
}

export interface CollectionInfo {
  name: string;
  exists: boolean;
  /** from the stamp in SQL (undefined when the collection was made by something else) */
  model?: string;
  /** from the index itself where it knows (Qdrant), else from the stamp */
  dimensions?: number;
  distance?: string;
  points: number;
}

/** A stored point as listed for `cpe verify`. */
export interface PointRef {
  id: string;
  documentId: number;
  /** the chunk the point was stored for (its payload's chunk_id), when it says */
  chunkId?: number;
}

/** Where an index sends a warning (a step's scoped logger fits). */
export interface IndexLog {
  warn(message: string, context?: Record<string, unknown>): void;
}

export interface EnsureCollectionOptions {
  /**
   * where a warning goes, e.g. that a collection cpe had made and filled was found missing and is made again
   * empty (default: the index's own, standard error)
   */
  log?: IndexLog;
}

/**
 * The similarity index: never the truth (that is SQL), always rebuildable from it. Two implementations:
 * SqlVectorIndex (vectors in ki_content, exact search in process) and QdrantVectorIndex.
 */
export interface VectorIndex {
  readonly kind: 'embedded' | 'qdrant';
  /** where the points live, without secrets ('sqlite:/x/ki_content.sqlite', 'http://qdrant:6333') */
  readonly location: string;
  /**
   * creates the collection or checks that it matches spec; a different model or size is a COLLECTION_MISMATCH. A
   * collection cpe had made (stamped) but found missing is made again with a warning naming `cpe verify --repair`.
   */
  ensureCollection(name: string, spec: CollectionSpec, options?: EnsureCollectionOptions): Promise<void>;
  describeCollection(name: string): Promise<CollectionInfo>;
  /** inserts or replaces points by id (idempotent) */
  upsert(collection: string, points: readonly VectorPoint[]): Promise<void>;
  /** removes the document's points, except keepIds (the ones just stored) */
  deleteByDocument(
    collection: string,
    documentId: number,
    options?: { keepIds?: readonly string[] },
  ): Promise<void>;
  deletePoints(collection: string, ids: readonly string[]): Promise<void>;
  search(
    collection: string,
    vector: Float32Array,
    options: { limit: number; documentIds?: readonly number[] },
  ): Promise<VectorSearchResult[]>;
  listPoints(collection: string): Promise<PointRef[]>;
  count(collection: string): Promise<number>;
  /** payload indexes (Qdrant), ANALYZE (embedded); returns what it did, one line each */
  optimize(collection: string): Promise<string[]>;
  /** removes the collection, its points and its stamp */
  dropCollection(name: string): Promise<void>;
  close(): Promise<void>;
}
