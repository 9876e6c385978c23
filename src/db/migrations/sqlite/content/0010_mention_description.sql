-- The description a mention's answer gave its entity ('' when it gave none; NULL: written before this migration).
-- An entity's name and description are its first mention's; when mentions go (a version deleted, replaced or
-- extracted again), the entity takes them from the mentions that remain, and only a mention can say what its
-- answer described.
ALTER TABLE entity_mentions ADD COLUMN description TEXT NULL;
