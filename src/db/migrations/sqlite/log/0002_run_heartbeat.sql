-- A live run's heartbeat (see the MariaDB migration of the same number): set every few seconds while the run runs;
-- a run still 'running' whose heartbeat stopped long ago is dead.
ALTER TABLE pipeline_runs ADD COLUMN heartbeat_at TEXT NULL;
CREATE INDEX ix_pipeline_runs_status ON pipeline_runs (status);
