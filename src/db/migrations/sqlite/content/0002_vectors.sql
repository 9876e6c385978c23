-- Vectors: the embedding cache, the link from chunks to their vectors, collection stamps, and the embedded
-- vector index. Vectors are little-endian float32 BLOBs (4 bytes per dimension), never JSON.

-- One vector per (model, SHA-256 of the prepared text): a rerun or an unchanged chunk never calls the embedder.
CREATE TABLE embedding_cache (
  model       TEXT NOT NULL,
  text_hash   TEXT NOT NULL,
  dimensions  INTEGER NOT NULL,
  vector      BLOB NOT NULL,
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (model, text_hash)
);

-- Which cached vector belongs to which chunk, per model: what `embed` produced and `vector_store` stores.
CREATE TABLE chunk_vectors (
  chunk_id    INTEGER NOT NULL,
  model       TEXT NOT NULL,
  text_hash   TEXT NOT NULL,
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (chunk_id, model),
  CONSTRAINT fk_chunk_vectors_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
);

-- The stamp: the model and dimension each collection was built with, per backend. `revision` counts writes
-- to the embedded index so that a process holding the vectors in memory notices other writers.
CREATE TABLE vector_collections (
  backend     TEXT NOT NULL,
  name        TEXT NOT NULL,
  location    TEXT NOT NULL,
  model       TEXT NOT NULL,
  dimensions  INTEGER NOT NULL,
  distance    TEXT NOT NULL,
  revision    INTEGER NOT NULL DEFAULT 0,
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (backend, name)
);

-- The embedded vector index: one row per point, vectors normalised at write time (search is a dot product).
CREATE TABLE vector_points (
  collection  TEXT NOT NULL,
  point_id    TEXT NOT NULL,
  document_id INTEGER NOT NULL,
  chunk_id    INTEGER NULL,
  vector      BLOB NOT NULL,
  payload     TEXT NOT NULL,
  updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (collection, point_id)
);
CREATE INDEX ix_vector_points_document ON vector_points (collection, document_id);
