-- Source paths of any length: a deep folder tree passes 1024 characters, and one such file failed every scan of
-- its folder. The paths become TEXT; path_hash stays the key of a queue item and of a source file, and documents
-- keep their prefix index on source_path.
ALTER TABLE documents MODIFY source_path TEXT NOT NULL;
ALTER TABLE pipeline_queue MODIFY path TEXT NOT NULL;
ALTER TABLE source_files MODIFY path TEXT NOT NULL;
