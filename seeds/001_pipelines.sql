-- Seeded pipelines. Plain SQL for the mysql/mariadb client and for `cpe db seed` (SQLite and MariaDB).
-- Idempotent: a row is inserted only when it is missing, so re-seeding never overwrites your edits (a step you
-- deleted or renamed, or a renamed pipeline, is missing, though: `cpe db seed` adds it again). Standard becomes
-- the default pipeline only when no pipeline is.
-- depends_on NULL means: after the previous enabled step by sort_order.

-- Standard
INSERT INTO pipeline_configs (name, description, is_default, status)
  SELECT 'Standard', 'Standardpipeline: erkennen, Text extrahieren, in Abschnitte teilen, einbetten, analysieren (LLM, sofern konfiguriert).',
    CASE WHEN EXISTS (SELECT 1 FROM pipeline_configs WHERE is_default = 1) THEN 0 ELSE 1 END, 'active' FROM (SELECT 1 AS one) AS seed
  WHERE NOT EXISTS (SELECT 1 FROM pipeline_configs WHERE name = 'Standard');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'detect', 'detect', 10, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Standard' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'detect');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'extract', 'extract', 20, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Standard' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'extract');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'chunk', 'chunk', 30, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Standard' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'chunk');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'embed', 'embed', 40, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Standard' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'embed');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'analyze', 'analyze', 50, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Standard' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'analyze');

-- Schulungsunterlagen
INSERT INTO pipeline_configs (name, description, is_default, status)
  SELECT 'Schulungsunterlagen', 'Schulungsunterlagen vollständig: Seiten, Bilder, Struktur, Chunks, Vektoren, Entitäten, Relationen, Taxonomie, Semantik, Zusammenfassungen und Fragen.', 0, 'active' FROM (SELECT 1 AS one) AS seed
  WHERE NOT EXISTS (SELECT 1 FROM pipeline_configs WHERE name = 'Schulungsunterlagen');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'detect', 'detect', 10, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'detect');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'validate', 'validate', 20, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'validate');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'page_split', 'page_split', 30, 1, NULL, NULL FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'page_split');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'vision_analyze', 'vision_analyze', 40, 1, NULL, '["page_split"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'vision_analyze');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'extract', 'extract', 50, 1, NULL, '["page_split"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'extract');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'structure', 'structure', 60, 1, NULL, '["extract"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'structure');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'segment', 'segment', 70, 1, NULL, '["structure"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'segment');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'chunk', 'chunk', 80, 1, NULL, '["segment", "vision_analyze"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'chunk');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'metadata_store', 'metadata_store', 90, 1, NULL, '["chunk"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'metadata_store');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'embed', 'embed', 100, 1, NULL, '["chunk"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'embed');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'collection_setup', 'collection_setup', 110, 1, NULL, '["detect"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'collection_setup');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'vector_store', 'vector_store', 120, 1, NULL, '["embed", "collection_setup"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'vector_store');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'index_optimize', 'index_optimize', 130, 1, NULL, '["vector_store"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'index_optimize');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'entity_extract', 'entity_extract', 140, 1, NULL, '["chunk"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'entity_extract');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'relation_extract', 'relation_extract', 150, 1, NULL, '["entity_extract"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'relation_extract');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'taxonomy_build', 'taxonomy_build', 160, 1, NULL, '["entity_extract"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'taxonomy_build');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'semantic_analyze', 'semantic_analyze', 170, 1, NULL, '["chunk"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'semantic_analyze');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'summarize', 'summarize', 180, 1, NULL, '["chunk"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'summarize');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'question_generate', 'question_generate', 190, 1, NULL, '["chunk"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'question_generate');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, 'finalize', 'finalize', 200, 1, NULL, '["metadata_store", "vector_store", "relation_extract", "taxonomy_build", "semantic_analyze", "summarize", "question_generate"]' FROM pipeline_configs p
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.name = 'finalize');
