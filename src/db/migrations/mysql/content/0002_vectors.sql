-- Vectors: the embedding cache, the link from chunks to their vectors, collection stamps, and the embedded
-- vector index. Vectors are little-endian float32 BLOBs (4 bytes per dimension), never JSON.

-- One vector per (model, SHA-256 of the prepared text): a rerun or an unchanged chunk never calls the embedder.
CREATE TABLE embedding_cache (
  model       VARCHAR(190) NOT NULL,
  text_hash   CHAR(64) NOT NULL,
  dimensions  INT NOT NULL,
  vector      MEDIUMBLOB NOT NULL,
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (model, text_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Which cached vector belongs to which chunk, per model: what `embed` produced and `vector_store` stores.
CREATE TABLE chunk_vectors (
  chunk_id    BIGINT NOT NULL,
  model       VARCHAR(190) NOT NULL,
  text_hash   CHAR(64) NOT NULL,
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (chunk_id, model),
  CONSTRAINT fk_chunk_vectors_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The stamp: the model and dimension each collection was built with, per backend. `revision` counts writes
-- to the embedded index so that a process holding the vectors in memory notices other writers.
CREATE TABLE vector_collections (
  backend     VARCHAR(20) NOT NULL,
  name        VARCHAR(190) NOT NULL,
  location    VARCHAR(1024) NOT NULL,
  model       VARCHAR(190) NOT NULL,
  dimensions  INT NOT NULL,
  distance    VARCHAR(20) NOT NULL,
  revision    BIGINT NOT NULL DEFAULT 0,
  created_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (backend, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The embedded vector index: one row per point, vectors normalised at write time (search is a dot product).
CREATE TABLE vector_points (
  collection  VARCHAR(190) NOT NULL,
  point_id    CHAR(36) NOT NULL,
  document_id BIGINT NOT NULL,
  chunk_id    BIGINT NULL,
  vector      MEDIUMBLOB NOT NULL,
  payload     LONGTEXT NOT NULL,
  updated_at  DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  PRIMARY KEY (collection, point_id),
  KEY ix_vector_points_document (collection, document_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
