-- A queue item that is to run every step again, checkpoints ignored (`cpe reprocess`, `cpe run --force`): 1. The
-- request travels with the item, so whichever process claims it (a `cpe worker` as well as the command that queued
-- it) runs every step; a requeue or a retry of a forced item keeps the flag.
ALTER TABLE pipeline_queue ADD COLUMN forced TINYINT(1) NOT NULL DEFAULT 0 AFTER file_size;
