-- Each vector and each text is stored once.
--
-- vector_points: a chunk's point refers to its vector in embedding_cache (vector_model, text_hash) instead of
-- holding a second copy of the same 4 KiB; `vector` holds the normalised vector only for points without such a
-- row (entities, points stored by hand, vectors that were not unit length). Exactly one of the two is set.
-- content_chars: set when the payload's `content` is the first content_chars characters of the chunk's text; the
-- payload then leaves it out and a search reads it from chunks.content.
-- SQLite cannot make a NOT NULL column nullable in place, so the table is rebuilt, in one pass: a point whose
-- vector is, byte for byte, the cached vector of its chunk becomes a reference (the vector is not copied), the
-- others keep theirs.
CREATE TABLE vector_points_0004 (
  collection    TEXT NOT NULL,
  point_id      TEXT NOT NULL,
  document_id   INTEGER NOT NULL,
  chunk_id      INTEGER NULL,
  vector        BLOB NULL,
  vector_model  TEXT NULL,
  text_hash     TEXT NULL,
  payload       TEXT NOT NULL,
  content_chars INTEGER NULL,
  updated_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  PRIMARY KEY (collection, point_id),
  CONSTRAINT ck_vector_points_vector CHECK ((vector IS NULL) = (text_hash IS NOT NULL))
);
INSERT INTO vector_points_0004 (collection, point_id, document_id, chunk_id, vector, vector_model, text_hash, payload, updated_at)
  SELECT vp.collection, vp.point_id, vp.document_id, vp.chunk_id,
         CASE WHEN ec.text_hash IS NULL THEN vp.vector END, ec.model, ec.text_hash, vp.payload, vp.updated_at
  FROM vector_points vp
  LEFT JOIN vector_collections vc ON vc.backend = 'embedded' AND vc.name = vp.collection
  LEFT JOIN chunk_vectors cv ON cv.chunk_id = vp.chunk_id AND cv.model = vc.model
  LEFT JOIN embedding_cache ec ON ec.model = cv.model AND ec.text_hash = cv.text_hash AND ec.vector = vp.vector
  ORDER BY vp.rowid;
DROP TABLE vector_points;
ALTER TABLE vector_points_0004 RENAME TO vector_points;
CREATE INDEX ix_vector_points_document ON vector_points (collection, document_id);

-- document_extracts: when the extract step writes the pages itself, `text` is left empty and text_in_pages = 1:
-- the text is the pages' content (document_pages) at the offsets in `pages`, joined by the blank lines between
-- blocks. A text the pages do not reproduce exactly is stored as before.
ALTER TABLE document_extracts ADD COLUMN text_in_pages INTEGER NOT NULL DEFAULT 0;
