-- ki_content: the single source of truth. MariaDB 10.6+ / MySQL 8.
-- JSON-valued columns that users edit by hand (pipeline_steps.config, depends_on) are LONGTEXT, not JSON, so
-- that a bad edit reaches the engine and gets a precise error naming the row instead of a bare CHECK failure.
CREATE TABLE pipeline_configs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT NOT NULL,
  description   TEXT NULL,
  is_default    INTEGER NOT NULL DEFAULT 0,
  status        TEXT NOT NULL DEFAULT 'active',
  source_path   TEXT NULL,
  settings      TEXT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_pipeline_configs_name UNIQUE (name),
  CONSTRAINT ck_pipeline_configs_status CHECK (status IN ('active', 'draft', 'archived'))
);

CREATE TABLE pipeline_steps (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  pipeline_id   INTEGER NOT NULL,
  name          TEXT NULL,
  step_type     TEXT NOT NULL,
  sort_order    INTEGER NOT NULL DEFAULT 0,
  enabled       INTEGER NOT NULL DEFAULT 1,
  config        TEXT NULL,
  depends_on    TEXT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT fk_pipeline_steps_pipeline FOREIGN KEY (pipeline_id) REFERENCES pipeline_configs (id) ON DELETE CASCADE
);
CREATE INDEX ix_pipeline_steps_pipeline ON pipeline_steps (pipeline_id, sort_order);

CREATE TABLE documents (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  filename            TEXT NOT NULL,
  source_path         TEXT NOT NULL,
  file_size           INTEGER NOT NULL DEFAULT 0,
  content_hash        TEXT NOT NULL,
  mime_type           TEXT NULL,
  page_count          INTEGER NULL,
  title               TEXT NULL,
  language            TEXT NULL,
  status              TEXT NOT NULL DEFAULT 'pending',
  version             INTEGER NOT NULL DEFAULT 1,
  previous_version_id INTEGER NULL,
  is_latest           INTEGER NOT NULL DEFAULT 1,
  metadata            TEXT NULL,
  error               TEXT NULL,
  created_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  processed_at        TEXT NULL,
  CONSTRAINT fk_documents_previous FOREIGN KEY (previous_version_id) REFERENCES documents (id) ON DELETE SET NULL,
  CONSTRAINT ck_documents_status CHECK (status IN ('pending', 'processing', 'done', 'failed', 'deleted'))
);
CREATE INDEX ix_documents_source_path ON documents (source_path);
CREATE INDEX ix_documents_content_hash ON documents (content_hash);
CREATE INDEX ix_documents_status ON documents (status);

-- Original bytes of every document version, content-addressed (the bytes themselves live in the archive folder).
CREATE TABLE document_archive (
  content_hash  TEXT NOT NULL PRIMARY KEY,
  byte_size     INTEGER NOT NULL,
  storage_path  TEXT NOT NULL,
  captured_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);

CREATE TABLE document_extracts (
  document_id   INTEGER NOT NULL PRIMARY KEY,
  text          TEXT NOT NULL,
  blocks        TEXT NOT NULL,
  pages         TEXT NOT NULL,
  metadata      TEXT NULL,
  format        TEXT NOT NULL,
  ocr_needed    INTEGER NOT NULL DEFAULT 0,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT fk_document_extracts_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
);

CREATE TABLE document_pages (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id   INTEGER NOT NULL,
  page_number   INTEGER NOT NULL,
  content       TEXT NOT NULL,
  metadata      TEXT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_document_pages UNIQUE (document_id, page_number),
  CONSTRAINT fk_document_pages_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
);

CREATE TABLE document_sections (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id   INTEGER NOT NULL,
  section_index INTEGER NOT NULL,
  parent_index  INTEGER NULL,
  level         INTEGER NOT NULL,
  heading       TEXT NOT NULL,
  heading_path  TEXT NOT NULL,
  start_offset  INTEGER NOT NULL,
  end_offset    INTEGER NOT NULL,
  page_start    INTEGER NULL,
  page_end      INTEGER NULL,
  CONSTRAINT uq_document_sections UNIQUE (document_id, section_index),
  CONSTRAINT fk_document_sections_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
);

CREATE TABLE document_segments (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id   INTEGER NOT NULL,
  segment_index INTEGER NOT NULL,
  section_index INTEGER NOT NULL,
  type          TEXT NOT NULL,
  start_offset  INTEGER NOT NULL,
  end_offset    INTEGER NOT NULL,
  page          INTEGER NULL,
  sentences     TEXT NULL,
  CONSTRAINT uq_document_segments UNIQUE (document_id, segment_index),
  CONSTRAINT fk_document_segments_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
);

CREATE TABLE chunks (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id      INTEGER NOT NULL,
  chunk_index      INTEGER NOT NULL,
  content          TEXT NOT NULL,
  content_hash     TEXT NOT NULL,
  token_count      INTEGER NOT NULL DEFAULT 0,
  heading_path     TEXT NULL,
  metadata         TEXT NULL,
  start_offset     INTEGER NULL,
  end_offset       INTEGER NULL,
  page_start       INTEGER NULL,
  page_end         INTEGER NULL,
  status           TEXT NOT NULL DEFAULT 'pending',
  qdrant_id        TEXT NULL,
  embedding_model  TEXT NULL,
  pipeline_version TEXT NULL,
  step_config_hash TEXT NULL,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_chunks_document_index UNIQUE (document_id, chunk_index),
  CONSTRAINT fk_chunks_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT ck_chunks_status CHECK (status IN ('pending', 'embedded', 'failed'))
);
CREATE INDEX ix_chunks_status ON chunks (status);

CREATE TABLE entities (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  name            TEXT NOT NULL,
  normalized_name TEXT NOT NULL,
  type            TEXT NOT NULL,
  description     TEXT NULL,
  qdrant_id       TEXT NULL,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_entities_name_type UNIQUE (normalized_name, type)
);

CREATE TABLE entity_mentions (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  entity_id     INTEGER NOT NULL,
  document_id   INTEGER NOT NULL,
  chunk_id      INTEGER NULL,
  mention_text  TEXT NOT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT fk_entity_mentions_entity FOREIGN KEY (entity_id) REFERENCES entities (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_mentions_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_mentions_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
);
CREATE INDEX ix_entity_mentions_entity ON entity_mentions (entity_id);
CREATE INDEX ix_entity_mentions_document ON entity_mentions (document_id);

CREATE TABLE entity_relations (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  source_entity_id INTEGER NOT NULL,
  target_entity_id INTEGER NOT NULL,
  relation_type    TEXT NOT NULL,
  description      TEXT NULL,
  document_id      INTEGER NOT NULL,
  chunk_id         INTEGER NULL,
  confidence       REAL NULL,
  created_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT fk_entity_relations_source FOREIGN KEY (source_entity_id) REFERENCES entities (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_relations_target FOREIGN KEY (target_entity_id) REFERENCES entities (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_relations_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_entity_relations_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
);
CREATE INDEX ix_entity_relations_document ON entity_relations (document_id);

CREATE TABLE taxonomy_terms (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT NOT NULL,
  parent_id     INTEGER NULL,
  path          TEXT NOT NULL,
  description   TEXT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_taxonomy_terms_path UNIQUE (path),
  CONSTRAINT fk_taxonomy_terms_parent FOREIGN KEY (parent_id) REFERENCES taxonomy_terms (id) ON DELETE CASCADE
);

CREATE TABLE document_taxonomy (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id   INTEGER NOT NULL,
  term_id       INTEGER NOT NULL,
  confidence    REAL NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_document_taxonomy UNIQUE (document_id, term_id),
  CONSTRAINT fk_document_taxonomy_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_document_taxonomy_term FOREIGN KEY (term_id) REFERENCES taxonomy_terms (id) ON DELETE CASCADE
);

CREATE TABLE chunk_semantics (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  chunk_id       INTEGER NOT NULL,
  summary        TEXT NULL,
  keywords       TEXT NULL,
  sentiment      TEXT NULL,
  topics         TEXT NULL,
  analysis_model TEXT NULL,
  created_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_chunk_semantics_chunk UNIQUE (chunk_id),
  CONSTRAINT fk_chunk_semantics_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
);

CREATE TABLE document_summaries (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id   INTEGER NOT NULL,
  summary       TEXT NOT NULL,
  model         TEXT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_document_summaries_document UNIQUE (document_id),
  CONSTRAINT fk_document_summaries_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
);

CREATE TABLE generated_questions (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id   INTEGER NOT NULL,
  chunk_id      INTEGER NOT NULL,
  question      TEXT NOT NULL,
  answer        TEXT NULL,
  model         TEXT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT fk_generated_questions_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT fk_generated_questions_chunk FOREIGN KEY (chunk_id) REFERENCES chunks (id) ON DELETE CASCADE
);
CREATE INDEX ix_generated_questions_chunk ON generated_questions (chunk_id);

CREATE TABLE knowledge_items (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id       INTEGER NOT NULL,
  level             TEXT NOT NULL,
  page_number       INTEGER NULL,
  section_index     INTEGER NULL,
  statement         TEXT NOT NULL,
  sources           TEXT NOT NULL,
  validation        TEXT NULL,
  validation_reason TEXT NULL,
  model             TEXT NULL,
  created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT fk_knowledge_items_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE,
  CONSTRAINT ck_knowledge_items_level CHECK (level IN ('page', 'section', 'document')),
  CONSTRAINT ck_knowledge_items_validation CHECK (validation IS NULL OR validation IN ('grounded', 'unsupported'))
);
CREATE INDEX ix_knowledge_items_document ON knowledge_items (document_id, level);

CREATE TABLE pipeline_queue (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  path            TEXT NOT NULL,
  path_hash       TEXT NOT NULL,
  hash            TEXT NOT NULL,
  action          TEXT NOT NULL,
  status          TEXT NOT NULL DEFAULT 'pending',
  attempts        INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER NOT NULL DEFAULT 3,
  next_attempt_at TEXT NULL,
  locked_by       TEXT NULL,
  locked_until    TEXT NULL,
  last_error      TEXT NULL,
  document_id     INTEGER NULL,
  file_size       INTEGER NULL,
  created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  finished_at     TEXT NULL,
  CONSTRAINT uq_pipeline_queue_item UNIQUE (path_hash, hash, action),
  CONSTRAINT ck_pipeline_queue_action CHECK (action IN ('new', 'update', 'delete')),
  CONSTRAINT ck_pipeline_queue_status CHECK (status IN ('pending', 'processing', 'done', 'failed', 'dead'))
);
CREATE INDEX ix_pipeline_queue_claim ON pipeline_queue (status, next_attempt_at);
CREATE INDEX ix_pipeline_queue_status_id ON pipeline_queue (status, id);

-- Which step finished for which document version, with which lineage hash (step config + upstream hashes).
CREATE TABLE step_checkpoints (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  document_id   INTEGER NOT NULL,
  pipeline_id   INTEGER NOT NULL,
  step_name     TEXT NOT NULL,
  step_type     TEXT NOT NULL,
  config_hash   TEXT NOT NULL,
  run_id        INTEGER NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  CONSTRAINT uq_step_checkpoints UNIQUE (document_id, pipeline_id, step_name),
  CONSTRAINT fk_step_checkpoints_document FOREIGN KEY (document_id) REFERENCES documents (id) ON DELETE CASCADE
);

-- SQLite has no ON UPDATE: keep updated_at honest for rows users edit by hand.
CREATE TRIGGER tr_pipeline_configs_updated AFTER UPDATE ON pipeline_configs
  WHEN NEW.updated_at = OLD.updated_at
  BEGIN UPDATE pipeline_configs SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE id = NEW.id; END;
CREATE TRIGGER tr_pipeline_steps_updated AFTER UPDATE ON pipeline_steps
  WHEN NEW.updated_at = OLD.updated_at
  BEGIN UPDATE pipeline_steps SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE id = NEW.id; END;
