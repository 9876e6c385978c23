-- ki_content: reference DDL for MariaDB/MySQL, generated from src/db/migrations/mysql/content/ by `npm run schema`.
-- Do not edit: add a numbered migration instead. cpe applies migrations itself (`cpe db migrate`).

-- ---------------------------------------------------------------------------
-- migration 0001_initial
-- ---------------------------------------------------------------------------

-- ki_content: the single source of truth. MariaDB 10.6+ / MySQL 8.
-- JSON-valued columns that users edit by hand (pipeline_steps.config, depends_on) are LONGTEXT, not JSON, so
-- that a bad edit reaches the engine and gets a precise error naming the row instead of a bare CHECK failure.

CREATE TABLE pipeline_configs (
  id            INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name          VARCHAR(190) NOT NULL,
  description   TEXT NULL,
  is_default    TINYINT(1) NOT NULL DEFAULT 0,
  status        VARCHAR(20) NOT NULL DEFAULT 'active',
  source_path   VARCHAR(1024) NULL,
  settings      LONGTEXT NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_pipeline_configs_name (name),
  CONSTRAINT ck_pipeline_configs_status CHECK (status IN ('active', 'draft', 'archived'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE pipeline_steps (
  id            INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  pipeline_id   INT NOT NULL,
  name          VARCHAR(190) NULL,
  step_type     VARCHAR(100) NOT NULL,
  sort_order    INT NOT NULL DEFAULT 0,
  enabled       TINYINT(1) NOT NULL DEFAULT 1,
  config        LONGTEXT NULL,
  depends_on    LONGTEXT NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  KEY ix_pipeline_steps_pipeline (pipeline_id, sort_order),
  CONSTRAINT fk_pipeline_steps_pipeline FOREIGN KEY (pipeline_id) REFERENCES pipeline_configs (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE documents (
  id                  BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  filename            VARCHAR(255) NOT NULL,
  source_path         VARCHAR(1024) NOT NULL,
  file_size           BIGINT NOT NULL DEFAULT 0,
  content_hash        CHAR(64) NOT NULL,
  mime_type           VARCHAR(100) NULL,
  page_count          INT NULL,
  title               VARCHAR(1024) NULL,
  language            VARCHAR(10) NULL,
  status              VARCHAR(20) NOT NULL DEFAULT 'pending',
  version             INT NOT NULL DEFAULT 1,
  previous_version_id BIGINT NULL,
  is_latest           TINYINT(1) NOT NULL DEFAULT 1,
  metadata            LONGTEXT NULL,
  error               TEXT NULL,
  created_at          DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at          DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  processed_at        DATETIME(3) NULL,
  KEY ix_documents_source_path (source_path(255)),
  KEY ix_documents_content_hash (content_hash),
  KEY ix_documents_status (status),
  CONSTRAINT fk_documents_previous FOREIGN KEY (previous_version_id) REFERENCES documents (id) ON DELETE SET NULL,
  CONSTRAINT ck_documents_status CHECK (status IN ('pending', 'processing', 'done', 'failed', 'deleted'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Original bytes of every document version, content-addressed (the bytes themselves live in the archive folder).
CREATE TABLE document_archive (
  content_hash  CHAR(64) NOT NULL PRIMARY KEY,
  byte_size     BIGINT NOT NULL,
  storage_path  VARCHAR(1024) NOT NULL,
  captured_at   DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE document_extracts (
  document_id   BIGINT NOT NULL PRIMARY KEY,
  text          LONGTEXT NOT NULL,
  blocks        LONGTEXT NOT NULL,
  pages         LONGTEXT NOT NULL,
  metadata      LONGTEXT NULL,
  format        VARCHAR(10) NOT NULL,
  ocr_needed    TINYINT(1) NOT NULL DEFAULT 0,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  CONSTRAINT fk_document_extracts_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE document_pages (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id   BIGINT NOT NULL,
  page_number   INT NOT NULL,
  content       LONGTEXT NOT NULL,
  metadata      LONGTEXT NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_document_pages (document_id, page_number),
  CONSTRAINT fk_document_pages_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE document_sections (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id   BIGINT NOT NULL,
  section_index INT NOT NULL,
  parent_index  INT NULL,
  level         INT NOT NULL,
  heading       TEXT NOT NULL,
  heading_path  LONGTEXT NOT NULL,
  start_offset  INT NOT NULL,
  end_offset    INT NOT NULL,
  page_start    INT NULL,
  page_end      INT NULL,
  UNIQUE KEY uq_document_sections (document_id, section_index),
  CONSTRAINT fk_document_sections_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE document_segments (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id   BIGINT NOT NULL,
  segment_index INT NOT NULL,
  section_index INT NOT NULL,
  type          VARCHAR(20) NOT NULL,
  start_offset  INT NOT NULL,
  end_offset    INT NOT NULL,
  page          INT NULL,
  sentences     LONGTEXT NULL,
  UNIQUE KEY uq_document_segments (document_id, segment_index),
  CONSTRAINT fk_document_segments_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE chunks (
  id               BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id      BIGINT NOT NULL,
  chunk_index      INT NOT NULL,
  content          LONGTEXT NOT NULL,
  content_hash     CHAR(64) NOT NULL,
  token_count      INT NOT NULL DEFAULT 0,
  heading_path     LONGTEXT NULL,
  metadata         LONGTEXT NULL,
  start_offset     INT NULL,
  end_offset       INT NULL,
  page_start       INT NULL,
  page_end         INT NULL,
  status           VARCHAR(20) NOT NULL DEFAULT 'pending',
  qdrant_id        CHAR(36) NULL,
  embedding_model  VARCHAR(100) NULL,
  pipeline_version CHAR(16) NULL,
  step_config_hash CHAR(16) NULL,
  created_at       DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_chunks_document_index (document_id, chunk_index),
  KEY ix_chunks_status (status),
  CONSTRAINT fk_chunks_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT ck_chunks_status CHECK (status IN ('pending', 'embedded', 'failed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE entities (
  id              BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name            VARCHAR(500) NOT NULL,
  normalized_name VARCHAR(255) NOT NULL,
  type            VARCHAR(50) NOT NULL,
  description     TEXT NULL,
  qdrant_id       CHAR(36) NULL,
  created_at      DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at      DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_entities_name_type (normalized_name, type)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE entity_mentions (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  entity_id     BIGINT NOT NULL,
  document_id   BIGINT NOT NULL,
  chunk_id      BIGINT NULL,
  mention_text  VARCHAR(500) NOT NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY ix_entity_mentions_entity (entity_id),
  KEY ix_entity_mentions_document (document_id),
  CONSTRAINT fk_entity_mentions_entity FOREIGN KEY (entity_id) REFERENCES entities (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_mentions_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_mentions_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE entity_relations (
  id               BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  source_entity_id BIGINT NOT NULL,
  target_entity_id BIGINT NOT NULL,
  relation_type    VARCHAR(100) NOT NULL,
  description      TEXT NULL,
  document_id      BIGINT NOT NULL,
  chunk_id         BIGINT NULL,
  confidence       DOUBLE NULL,
  created_at       DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY ix_entity_relations_document (document_id),
  CONSTRAINT fk_entity_relations_source FOREIGN KEY (source_entity_id) REFERENCES entities (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_relations_target FOREIGN KEY (target_entity_id) REFERENCES entities (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_relations_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_relations_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE taxonomy_terms (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name          VARCHAR(255) NOT NULL,
  parent_id     BIGINT NULL,
  path          VARCHAR(700) NOT NULL,
  description   TEXT NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_taxonomy_terms_path (path),
  CONSTRAINT fk_taxonomy_terms_parent FOREIGN KEY (parent_id) REFERENCES taxonomy_terms (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE document_taxonomy (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id   BIGINT NOT NULL,
  term_id       BIGINT NOT NULL,
  confidence    DOUBLE NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_document_taxonomy (document_id, term_id),
  CONSTRAINT fk_document_taxonomy_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_document_taxonomy_term FOREIGN KEY (term_id) REFERENCES taxonomy_terms (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE chunk_semantics (
  id             BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  chunk_id       BIGINT NOT NULL,
  summary        TEXT NULL,
  keywords       LONGTEXT NULL,
  sentiment      VARCHAR(20) NULL,
  topics         LONGTEXT NULL,
  analysis_model VARCHAR(100) NULL,
  created_at     DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_chunk_semantics_chunk (chunk_id),
  CONSTRAINT fk_chunk_semantics_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE document_summaries (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id   BIGINT NOT NULL,
  summary       LONGTEXT NOT NULL,
  model         VARCHAR(100) NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_document_summaries_document (document_id),
  CONSTRAINT fk_document_summaries_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE generated_questions (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id   BIGINT NOT NULL,
  chunk_id      BIGINT NOT NULL,
  question      TEXT NOT NULL,
  answer        TEXT NULL,
  model         VARCHAR(100) NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY ix_generated_questions_chunk (chunk_id),
  CONSTRAINT fk_generated_questions_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_generated_questions_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE knowledge_items (
  id                BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id       BIGINT NOT NULL,
  level             VARCHAR(20) NOT NULL,
  page_number       INT NULL,
  section_index     INT NULL,
  statement         TEXT NOT NULL,
  sources           LONGTEXT NOT NULL,
  validation        VARCHAR(20) NULL,
  validation_reason TEXT NULL,
  model             VARCHAR(100) NULL,
  created_at        DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY ix_knowledge_items_document (document_id, level),
  CONSTRAINT fk_knowledge_items_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT ck_knowledge_items_level CHECK (level IN ('page', 'section', 'document')),
  CONSTRAINT ck_knowledge_items_validation CHECK (validation IS NULL OR validation IN ('grounded', 'unsupported'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE pipeline_queue (
  id              BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  path            VARCHAR(1024) NOT NULL,
  path_hash       CHAR(64) NOT NULL,
  hash            CHAR(64) NOT NULL,
  action          VARCHAR(10) NOT NULL,
  status          VARCHAR(20) NOT NULL DEFAULT 'pending',
  attempts        INT NOT NULL DEFAULT 0,
  max_attempts    INT NOT NULL DEFAULT 3,
  next_attempt_at DATETIME(3) NULL,
  locked_by       VARCHAR(255) NULL,
  locked_until    DATETIME(3) NULL,
  last_error      TEXT NULL,
  document_id     BIGINT NULL,
  file_size       BIGINT NULL,
  created_at      DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  updated_at      DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  finished_at     DATETIME(3) NULL,
  UNIQUE KEY uq_pipeline_queue_item (path_hash, hash, action),
  KEY ix_pipeline_queue_claim (status, next_attempt_at),
  KEY ix_pipeline_queue_status_id (status, id),
  CONSTRAINT ck_pipeline_queue_action CHECK (action IN ('new', 'update', 'delete')),
  CONSTRAINT ck_pipeline_queue_status CHECK (status IN ('pending', 'processing', 'done', 'failed', 'dead'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Which step finished for which document version, with which lineage hash (step config + upstream hashes).
CREATE TABLE step_checkpoints (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  document_id   BIGINT NOT NULL,
  pipeline_id   INT NOT NULL,
  step_name     VARCHAR(190) NOT NULL,
  step_type     VARCHAR(100) NOT NULL,
  config_hash   CHAR(16) NOT NULL,
  run_id        BIGINT NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  UNIQUE KEY uq_step_checkpoints (document_id, pipeline_id, step_name),
  CONSTRAINT fk_step_checkpoints_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- ---------------------------------------------------------------------------
-- migration 0002_vectors
-- ---------------------------------------------------------------------------

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

-- ---------------------------------------------------------------------------
-- migration 0003_llm
-- ---------------------------------------------------------------------------

-- LLM response cache: one row per (provider, model, prompt, schema). A rerun, a resumed crash or a second
-- pipeline over the same chunk reads the validated answer from here instead of paying for the call again.
CREATE TABLE llm_cache (
  cache_key     CHAR(64) NOT NULL PRIMARY KEY,
  provider      VARCHAR(50) NOT NULL,
  model         VARCHAR(190) NOT NULL,
  schema_name   VARCHAR(100) NOT NULL,
  response      LONGTEXT NOT NULL,
  tokens_in     INT NOT NULL DEFAULT 0,
  tokens_out    INT NOT NULL DEFAULT 0,
  repaired      TINYINT(1) NOT NULL DEFAULT 0,
  hits          INT NOT NULL DEFAULT 0,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  last_hit_at   DATETIME(3) NULL,
  KEY ix_llm_cache_model (provider, model)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- ---------------------------------------------------------------------------
-- migration 0004_stored_once
-- ---------------------------------------------------------------------------

-- Each vector and each text is stored once.
--
-- vector_points: a chunk's point refers to its vector in embedding_cache (vector_model, text_hash) instead of
-- holding a second copy of the same 4 KiB; `vector` holds the normalised vector only for points without such a
-- row (entities, points stored by hand, vectors that were not unit length). Exactly one of the two is set.
-- content_chars: set when the payload's `content` is the first content_chars characters of the chunk's text; the
-- payload then leaves it out and a search reads it from chunks.content.
ALTER TABLE vector_points
  MODIFY vector MEDIUMBLOB NULL,
  ADD COLUMN vector_model VARCHAR(190) NULL AFTER vector,
  ADD COLUMN text_hash CHAR(64) NULL AFTER vector_model,
  ADD COLUMN content_chars INT NULL AFTER payload;

-- Existing points whose vector is, byte for byte, the cached vector of their chunk now refer to it.
UPDATE vector_points vp
  JOIN vector_collections vc ON vc.backend = 'embedded' AND vc.name = vp.collection
  JOIN chunk_vectors cv ON cv.chunk_id = vp.chunk_id AND cv.model = vc.model
  JOIN embedding_cache ec ON ec.model = cv.model AND ec.text_hash = cv.text_hash
SET vp.vector_model = ec.model, vp.text_hash = ec.text_hash, vp.vector = NULL
WHERE ec.vector = vp.vector;

ALTER TABLE vector_points
  ADD CONSTRAINT ck_vector_points_vector CHECK ((vector IS NULL) = (text_hash IS NOT NULL));

-- document_extracts: when the extract step writes the pages itself, `text` is left empty and text_in_pages = 1:
-- the text is the pages' content (document_pages) at the offsets in `pages`, joined by the blank lines between
-- blocks. A text the pages do not reproduce exactly is stored as before.
ALTER TABLE document_extracts ADD COLUMN text_in_pages TINYINT(1) NOT NULL DEFAULT 0;

-- ---------------------------------------------------------------------------
-- migration 0005_source_files
-- ---------------------------------------------------------------------------

-- What the scan knows about each source file: the file's stat signature (size, modification and change time in
-- nanoseconds, inode, device) when its bytes had this SHA-256. A later scan that sees the same signature knows
-- the hash without reading the file; any write to the file changes its change time (ctime), which no tool can
-- set back, so a changed file is always read and hashed again. `cpe run --rehash` ignores these rows.
CREATE TABLE source_files (
  path_hash     CHAR(64) NOT NULL PRIMARY KEY,
  path          VARCHAR(1024) NOT NULL,
  stat_key      VARCHAR(200) NOT NULL,
  content_hash  CHAR(64) NOT NULL,
  checked_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- ---------------------------------------------------------------------------
-- migration 0006_archive_inline
-- ---------------------------------------------------------------------------

-- The bytes of small archived files in SQL: content holds a file of at most 1 MiB itself (the scan writes it here
-- instead of the archive folder, as creating a file costs more than the row); storage_path then names where a
-- step that asks for a file path gets its copy. NULL: the bytes are in the file at storage_path.
ALTER TABLE document_archive ADD COLUMN content LONGBLOB NULL AFTER storage_path;

-- ---------------------------------------------------------------------------
-- migration 0007_long_paths
-- ---------------------------------------------------------------------------

-- Source paths of any length: a deep folder tree passes 1024 characters, and one such file failed every scan of
-- its folder. The paths become TEXT; path_hash stays the key of a queue item and of a source file, and documents
-- keep their prefix index on source_path.
ALTER TABLE documents MODIFY source_path TEXT NOT NULL;
ALTER TABLE pipeline_queue MODIFY path TEXT NOT NULL;
ALTER TABLE source_files MODIFY path TEXT NOT NULL;

-- ---------------------------------------------------------------------------
-- migration 0008_path_collation
-- ---------------------------------------------------------------------------

-- Source paths compare as the file system names them: byte for byte. Under the tables' utf8mb4_unicode_ci,
-- `regeln.md` and `Regeln.md` in one folder were one path to every `source_path = ?`: a new version of one
-- retracted the other for good. utf8mb4_bin compares code points (case and accents count); its one leniency,
-- trailing spaces in `=`, cannot join two paths of documents (they end in an extension), and prefix queries use
-- LIKE, which does not pad. Every column that holds a path gets it; the keys stay as they are (path_hash is the
-- key of a queue item and of a source file, documents keep their 255-character prefix index: 1,020 bytes).
ALTER TABLE documents MODIFY source_path TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
ALTER TABLE pipeline_queue MODIFY path TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
ALTER TABLE source_files MODIFY path TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
ALTER TABLE pipeline_configs MODIFY source_path VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;
ALTER TABLE document_archive MODIFY storage_path VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;

-- ---------------------------------------------------------------------------
-- migration 0009_queue_forced
-- ---------------------------------------------------------------------------

-- A queue item that is to run every step again, checkpoints ignored (`cpe reprocess`, `cpe run --force`): 1. The
-- request travels with the item, so whichever process claims it (a `cpe worker` as well as the command that queued
-- it) runs every step; a requeue or a retry of a forced item keeps the flag.
ALTER TABLE pipeline_queue ADD COLUMN forced TINYINT(1) NOT NULL DEFAULT 0 AFTER file_size;

-- ---------------------------------------------------------------------------
-- migration 0010_mention_description
-- ---------------------------------------------------------------------------

-- The description a mention's answer gave its entity ('' when it gave none; NULL: written before this migration).
-- An entity's name and description are its first mention's; when mentions go (a version deleted, replaced or
-- extracted again), the entity takes them from the mentions that remain, and only a mention can say what its
-- answer described.
ALTER TABLE entity_mentions ADD COLUMN description TEXT NULL AFTER mention_text;

-- ---------------------------------------------------------------------------
-- migration 0011_run_step_states
-- ---------------------------------------------------------------------------

-- What each pipeline's run-scoped steps after the documents (post steps: index_optimize, a custom `scope: 'run'`
-- step after the document steps) owe: 'pending' from the moment a run has processed documents until they run,
-- then 'ok' or 'failed', with the lineage hash (type + config) they ran with. A run that processes no document runs
-- only the post steps not 'ok' under their current hash: a failed one, one never run since documents came or since
-- its config changed; an idle run does not redo one that is done (index_optimize would ANALYZE on every idle run).
CREATE TABLE run_step_states (
  pipeline_id   INT NOT NULL,
  step_name     VARCHAR(190) NOT NULL,
  step_type     VARCHAR(100) NOT NULL,
  config_hash   CHAR(16) NOT NULL,
  status        VARCHAR(16) NOT NULL,
  run_id        BIGINT NULL,
  error         TEXT NULL,
  updated_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (pipeline_id, step_name),
  CONSTRAINT ck_run_step_states_status CHECK (status IN ('pending', 'ok', 'failed')),
  CONSTRAINT fk_run_step_states_pipeline FOREIGN KEY (pipeline_id) REFERENCES pipeline_configs (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
