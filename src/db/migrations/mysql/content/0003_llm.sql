-- LLM response cache: one row per (provider, model, prompt, schema). A rerun, a resumed crash or a second
-- pipeline over the same chunk reads the validated answer from here instead of paying for the call again.
CREATE TABLE llm_cache (
  cache_key     CHAR(64) NOT NULL PRIMARY KEY,
  provider      VARCHAR(50) NOT NULL,
  model         VARCHAR(190) NOT NULL,
  schema_name   VARCHAR(100) NOT NULL,
  response      LONGTEXT NOT NULL,
  tokens_in     INT NOT NULL DEFAULT 0,
  tokens_out    INT NOT NULL DEFAULT 0,
  repaired      TINYINT(1) NOT NULL DEFAULT 0,
  hits          INT NOT NULL DEFAULT 0,
  created_at    DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  last_hit_at   DATETIME(3) NULL,
  KEY ix_llm_cache_model (provider, model)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
