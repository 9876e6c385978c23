-- LLM response cache: one row per (provider, model, prompt, schema). A rerun, a resumed crash or a second
-- pipeline over the same chunk reads the validated answer from here instead of paying for the call again.
CREATE TABLE llm_cache (
  cache_key     TEXT NOT NULL PRIMARY KEY,
  provider      TEXT NOT NULL,
  model         TEXT NOT NULL,
  schema_name   TEXT NOT NULL,
  response      TEXT NOT NULL,
  tokens_in     INTEGER NOT NULL DEFAULT 0,
  tokens_out    INTEGER NOT NULL DEFAULT 0,
  repaired      INTEGER NOT NULL DEFAULT 0,
  hits          INTEGER NOT NULL DEFAULT 0,
  created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')),
  last_hit_at   TEXT NULL
);
CREATE INDEX ix_llm_cache_model ON llm_cache (provider, model);
