-- ki_dev: reference DDL for MariaDB/MySQL, generated from src/db/migrations/mysql/log/ by `npm run schema`.
-- Do not edit: add a numbered migration instead. cpe applies migrations itself (`cpe db migrate`).

-- ---------------------------------------------------------------------------
-- migration 0001_initial
-- ---------------------------------------------------------------------------

-- ki_dev: what happened. No foreign keys into ki_content: it is a separate database.

CREATE TABLE pipeline_runs (
  id             BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  pipeline_id    INT NULL,
  pipeline_name  VARCHAR(190) NOT NULL,
  version_hash   CHAR(16) NULL,
  command        TEXT NULL,
  host           VARCHAR(255) NOT NULL,
  pid            INT NOT NULL,
  status         VARCHAR(20) NOT NULL DEFAULT 'running',
  profile        LONGTEXT NULL,
  docs_total     INT NOT NULL DEFAULT 0,
  docs_done      INT NOT NULL DEFAULT 0,
  docs_failed    INT NOT NULL DEFAULT 0,
  docs_skipped   INT NOT NULL DEFAULT 0,
  steps_ok       INT NOT NULL DEFAULT 0,
  steps_failed   INT NOT NULL DEFAULT 0,
  steps_skipped  INT NOT NULL DEFAULT 0,
  tokens_in      BIGINT NOT NULL DEFAULT 0,
  tokens_out     BIGINT NOT NULL DEFAULT 0,
  error          TEXT NULL,
  started_at     DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  finished_at    DATETIME(3) NULL,
  duration_ms    INT NULL,
  KEY ix_pipeline_runs_started (started_at),
  CONSTRAINT ck_pipeline_runs_status CHECK (status IN ('running', 'ok', 'failed', 'cancelled'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE pipeline_step_runs (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id        BIGINT NOT NULL,
  document_id   BIGINT NULL,
  queue_id      BIGINT NULL,
  step_name     VARCHAR(190) NOT NULL,
  step_type     VARCHAR(100) NOT NULL,
  status        VARCHAR(20) NOT NULL,
  reason        TEXT NULL,
  attempt       INT NOT NULL DEFAULT 1,
  items_in      INT NULL,
  items_out     INT NULL,
  counts        LONGTEXT NULL,
  tokens_in     INT NOT NULL DEFAULT 0,
  tokens_out    INT NOT NULL DEFAULT 0,
  error_code    VARCHAR(40) NULL,
  error         TEXT NULL,
  started_at    DATETIME(3) NOT NULL,
  finished_at   DATETIME(3) NOT NULL,
  duration_ms   INT NOT NULL,
  KEY ix_pipeline_step_runs_run (run_id),
  KEY ix_pipeline_step_runs_document (document_id),
  CONSTRAINT ck_pipeline_step_runs_status CHECK (status IN ('ok', 'failed', 'skipped'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE pipeline_log (
  id            BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  run_id        BIGINT NULL,
  level         VARCHAR(10) NOT NULL,
  step_name     VARCHAR(190) NULL,
  document_id   BIGINT NULL,
  message       TEXT NOT NULL,
  context       LONGTEXT NULL,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY ix_pipeline_log_run (run_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- ---------------------------------------------------------------------------
-- migration 0002_run_heartbeat
-- ---------------------------------------------------------------------------

-- A live run's heartbeat: its process sets heartbeat_at every few seconds while it runs. A run still 'running'
-- whose heartbeat stopped long ago is dead (killed, crashed, cut off), whichever machine ran it: a MariaDB ki_dev is
-- shared by machines, whose process ids another machine cannot check. Runs from before this migration have none
-- (their start stands in for it).
ALTER TABLE pipeline_runs ADD COLUMN heartbeat_at DATETIME(3) NULL AFTER started_at;
ALTER TABLE pipeline_runs ADD KEY ix_pipeline_runs_status (status);
