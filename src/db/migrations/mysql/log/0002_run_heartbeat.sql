-- A live run's heartbeat: its process sets heartbeat_at every few seconds while it runs. A run still 'running'
-- whose heartbeat stopped long ago is dead (killed, crashed, cut off), whichever machine ran it: a MariaDB ki_dev is
-- shared by machines, whose process ids another machine cannot check. Runs from before this migration have none
-- (their start stands in for it).
ALTER TABLE pipeline_runs ADD COLUMN heartbeat_at DATETIME(3) NULL AFTER started_at;
ALTER TABLE pipeline_runs ADD KEY ix_pipeline_runs_status (status);
