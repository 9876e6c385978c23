-- The bytes of small archived files in SQL: content holds a file of at most 1 MiB itself (the scan writes it here
-- instead of the archive folder, as creating a file costs more than the row); storage_path then names where a
-- step that asks for a file path gets its copy. NULL: the bytes are in the file at storage_path.
ALTER TABLE document_archive ADD COLUMN content BLOB NULL;
