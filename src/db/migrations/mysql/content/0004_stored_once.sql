-- Each vector and each text is stored once.
--
-- vector_points: a chunk's point refers to its vector in embedding_cache (vector_model, text_hash) instead of
-- holding a second copy of the same 4 KiB; `vector` holds the normalised vector only for points without such a
-- row (entities, points stored by hand, vectors that were not unit length). Exactly one of the two is set.
-- content_chars: set when the payload's `content` is the first content_chars characters of the chunk's text; the
-- payload then leaves it out and a search reads it from chunks.content.
ALTER TABLE vector_points
  MODIFY vector MEDIUMBLOB NULL,
  ADD COLUMN vector_model VARCHAR(190) NULL AFTER vector,
  ADD COLUMN text_hash CHAR(64) NULL AFTER vector_model,
  ADD COLUMN content_chars INT NULL AFTER payload;

-- Existing points whose vector is, byte for byte, the cached vector of their chunk now refer to it.
UPDATE vector_points vp
  JOIN vector_collections vc ON vc.backend = 'embedded' AND vc.name = vp.collection
  JOIN chunk_vectors cv ON cv.chunk_id = vp.chunk_id AND cv.model = vc.model
  JOIN embedding_cache ec ON ec.model = cv.model AND ec.text_hash = cv.text_hash
SET vp.vector_model = ec.model, vp.text_hash = ec.text_hash, vp.vector = NULL
WHERE ec.vector = vp.vector;

ALTER TABLE vector_points
  ADD CONSTRAINT ck_vector_points_vector CHECK ((vector IS NULL) = (text_hash IS NOT NULL));

-- document_extracts: when the extract step writes the pages itself, `text` is left empty and text_in_pages = 1:
-- the text is the pages' content (document_pages) at the offsets in `pages`, joined by the blank lines between
-- blocks. A text the pages do not reproduce exactly is stored as before.
ALTER TABLE document_extracts ADD COLUMN text_in_pages TINYINT(1) NOT NULL DEFAULT 0;
