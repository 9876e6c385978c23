-- ki_dev: what happened. No foreign keys into ki_content: it is a separate database.
CREATE TABLE pipeline_runs (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  pipeline_id    INTEGER NULL,
  pipeline_name  TEXT NOT NULL,
  version_hash   TEXT NULL,
  command        TEXT NULL,
  host           TEXT NOT NULL,
  pid            INTEGER NOT NULL,
  status         TEXT NOT NULL DEFAULT 'running',
  profile        TEXT NULL,
  docs_total     INTEGER NOT NULL DEFAULT 0,
  docs_done      INTEGER NOT NULL DEFAULT 0,
  docs_failed    INTEGER NOT NULL DEFAULT 0,
  docs_skipped   INTEGER NOT NULL DEFAULT 0,
  steps_ok       INTEGER NOT NULL DEFAULT 0,
  steps_failed   INTEGER NOT NULL DEFAULT 0,
  steps_skipped  INTEGER NOT NULL DEFAULT 0,
  tokens_in      INTEGER NOT NULL DEFAULT 0,
  tokens_out     INTEGER NOT NULL DEFAULT 0,
  error          TEXT NULL,
  started_at     TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  finished_at    TEXT NULL,
  duration_ms    INTEGER NULL,
  CONSTRAINT ck_pipeline_runs_status CHECK (status IN ('running', 'ok', 'failed', 'cancelled'))
);
CREATE INDEX ix_pipeline_runs_started ON pipeline_runs (started_at);

CREATE TABLE pipeline_step_runs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        INTEGER NOT NULL,
  document_id   INTEGER NULL,
  queue_id      INTEGER NULL,
  step_name     TEXT NOT NULL,
  step_type     TEXT NOT NULL,
  status        TEXT NOT NULL,
  reason        TEXT NULL,
  attempt       INTEGER NOT NULL DEFAULT 1,
  items_in      INTEGER NULL,
  items_out     INTEGER NULL,
  counts        TEXT NULL,
  tokens_in     INTEGER NOT NULL DEFAULT 0,
  tokens_out    INTEGER NOT NULL DEFAULT 0,
  error_code    TEXT NULL,
  error         TEXT NULL,
  started_at    TEXT NOT NULL,
  finished_at   TEXT NOT NULL,
  duration_ms   INTEGER NOT NULL,
  CONSTRAINT ck_pipeline_step_runs_status CHECK (status IN ('ok', 'failed', 'skipped'))
);
CREATE INDEX ix_pipeline_step_runs_run ON pipeline_step_runs (run_id);
CREATE INDEX ix_pipeline_step_runs_document ON pipeline_step_runs (document_id);

CREATE TABLE pipeline_log (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id        INTEGER NULL,
  level         TEXT NOT NULL,
  step_name     TEXT NULL,
  document_id   INTEGER NULL,
  message       TEXT NOT NULL,
  context       TEXT NULL,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);
CREATE INDEX ix_pipeline_log_run ON pipeline_log (run_id);
