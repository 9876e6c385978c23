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
