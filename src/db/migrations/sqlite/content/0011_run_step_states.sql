-- What each pipeline's run-scoped steps after the documents (post steps: index_optimize, a custom `scope: 'run'`
-- step after the document steps) owe: 'pending' from the moment a run has processed documents until they run,
-- then 'ok' or 'failed', with the lineage hash (type + config) they ran with. A run that processes no document runs
-- only the post steps not 'ok' under their current hash: a failed one, one never run since documents came or since
-- its config changed; an idle run does not redo one that is done (index_optimize would ANALYZE on every idle run).
CREATE TABLE run_step_states (
  pipeline_id   INTEGER NOT NULL,
  step_name     TEXT NOT NULL,
  step_type     TEXT NOT NULL,
  config_hash   TEXT NOT NULL,
  status        TEXT NOT NULL,
  run_id        INTEGER NULL,
  error         TEXT NULL,
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (pipeline_id, step_name),
  CONSTRAINT ck_run_step_states_status CHECK (status IN ('pending', 'ok', 'failed')),
  CONSTRAINT fk_run_step_states_pipeline FOREIGN KEY (pipeline_id) REFERENCES pipeline_configs (id) ON DELETE CASCADE
);
