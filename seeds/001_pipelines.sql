-- Seeded pipelines. Plain SQL for the mysql/mariadb client and for `cpe db seed` (SQLite and MariaDB).
-- Idempotent: re-seeding never overwrites your edits. A pipeline is inserted when no pipeline has its name, and
-- gets its steps only while it has none: a step you deleted, renamed or added stays as you left it (a renamed
-- pipeline's name is free again, though: `cpe db seed` adds a fresh pipeline under it). Standard becomes the
-- default pipeline only when no pipeline is.
-- depends_on NULL means: after the previous enabled step by sort_order.

-- Standard
INSERT INTO pipeline_configs (name, description, is_default, status)
  SELECT 'Standard', 'Standardpipeline: erkennen, Text extrahieren, in Abschnitte teilen, einbetten, analysieren (LLM, sofern konfiguriert).',
    CASE WHEN EXISTS (SELECT 1 FROM pipeline_configs WHERE is_default = 1) THEN 0 ELSE 1 END, 'active' FROM (SELECT 1 AS one) AS seed
  WHERE NOT EXISTS (SELECT 1 FROM pipeline_configs WHERE name = 'Standard');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, s.name, s.step_type, s.sort_order, s.enabled, s.config, s.depends_on FROM pipeline_configs p JOIN (
              SELECT 'detect' AS name, 'detect' AS step_type, 10 AS sort_order, 1 AS enabled, NULL AS config, NULL AS depends_on
    UNION ALL SELECT 'extract', 'extract', 20, 1, NULL, NULL
    UNION ALL SELECT 'chunk', 'chunk', 30, 1, NULL, NULL
    UNION ALL SELECT 'embed', 'embed', 40, 1, NULL, NULL
    UNION ALL SELECT 'analyze', 'analyze', 50, 1, NULL, NULL
  ) s
  WHERE p.name = 'Standard' AND NOT EXISTS (SELECT 1 FROM pipeline_steps x WHERE x.pipeline_id = p.id)
  ORDER BY s.sort_order;

-- Schulungsunterlagen
INSERT INTO pipeline_configs (name, description, is_default, status)
  SELECT 'Schulungsunterlagen', 'Schulungsunterlagen vollständig: Seiten, Bilder, Struktur, Chunks, Vektoren, Entitäten, Relationen, Taxonomie, Semantik, Zusammenfassungen und Fragen.', 0, 'active' FROM (SELECT 1 AS one) AS seed
  WHERE NOT EXISTS (SELECT 1 FROM pipeline_configs WHERE name = 'Schulungsunterlagen');
INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config, depends_on)
  SELECT p.id, s.name, s.step_type, s.sort_order, s.enabled, s.config, s.depends_on FROM pipeline_configs p JOIN (
              SELECT 'detect' AS name, 'detect' AS step_type, 10 AS sort_order, 1 AS enabled, NULL AS config, NULL AS depends_on
    UNION ALL SELECT 'validate', 'validate', 20, 1, NULL, NULL
    UNION ALL SELECT 'page_split', 'page_split', 30, 1, NULL, NULL
    UNION ALL SELECT 'vision_analyze', 'vision_analyze', 40, 1, NULL, '["page_split"]'
    UNION ALL SELECT 'extract', 'extract', 50, 1, NULL, '["page_split"]'
    UNION ALL SELECT 'structure', 'structure', 60, 1, NULL, '["extract"]'
    UNION ALL SELECT 'segment', 'segment', 70, 1, NULL, '["structure"]'
    UNION ALL SELECT 'chunk', 'chunk', 80, 1, NULL, '["segment", "vision_analyze"]'
    UNION ALL SELECT 'metadata_store', 'metadata_store', 90, 1, NULL, '["chunk"]'
    UNION ALL SELECT 'embed', 'embed', 100, 1, NULL, '["chunk"]'
    UNION ALL SELECT 'collection_setup', 'collection_setup', 110, 1, NULL, '["detect"]'
    UNION ALL SELECT 'vector_store', 'vector_store', 120, 1, NULL, '["embed", "collection_setup"]'
    UNION ALL SELECT 'index_optimize', 'index_optimize', 130, 1, NULL, '["vector_store"]'
    UNION ALL SELECT 'entity_extract', 'entity_extract', 140, 1, NULL, '["chunk"]'
    UNION ALL SELECT 'relation_extract', 'relation_extract', 150, 1, NULL, '["entity_extract"]'
    UNION ALL SELECT 'taxonomy_build', 'taxonomy_build', 160, 1, NULL, '["entity_extract"]'
    UNION ALL SELECT 'semantic_analyze', 'semantic_analyze', 170, 1, NULL, '["chunk"]'
    UNION ALL SELECT 'summarize', 'summarize', 180, 1, NULL, '["chunk"]'
    UNION ALL SELECT 'question_generate', 'question_generate', 190, 1, NULL, '["chunk"]'
    UNION ALL SELECT 'finalize', 'finalize', 200, 1, NULL, '["metadata_store", "vector_store", "relation_extract", "taxonomy_build", "semantic_analyze", "summarize", "question_generate"]'
  ) s
  WHERE p.name = 'Schulungsunterlagen' AND NOT EXISTS (SELECT 1 FROM pipeline_steps x WHERE x.pipeline_id = p.id)
  ORDER BY s.sort_order;
