import type { SqlExecutor } from '../db/sql.js';
import { DEFAULT_MAX_EMBED_CHARS } from '../embed/prepare.js';
import { ConfigError, ErrorCodes } from '../errors.js';
import { parseJsonColumn } from '../util/json.js';

export interface EmbedSettings {
  /** the collection the pipeline's points go to: its vector_store step's, else its embed step's */
  collection: string;
  /** the embed step's cap on the text an embedding model with a context window reads */
  maxEmbedChars: number;
}

/**
 * Where a pipeline (by name, or the default one) puts its vectors and how it prepares texts for the embedder, read
 * from its enabled embed and vector_store rows: search, context, ask and verify look where the pipeline wrote, and
 * embed a query (or a repaired chunk) as it did. Defaults ('documents', 800 characters) for what is not set, not
 * readable, or not there.
 */
export async function embedSettings(db: SqlExecutor, pipeline?: string): Promise<EmbedSettings> {
  if (pipeline !== undefined) {
    const found = await db.query<{ name: string }>('SELECT name FROM pipeline_configs WHERE name = ?', [
      pipeline,
    ]);
    if (!found.some((r) => r.name === pipeline))
      throw new ConfigError(ErrorCodes.PIPELINE_NOT_FOUND, `pipeline '${pipeline}' not found`);
  }
  const rows = await db.query<{ step_type: string; config: unknown }>(
    `SELECT s.step_type, s.config FROM pipeline_steps s JOIN pipeline_configs p ON p.id = s.pipeline_id
     WHERE ${pipeline === undefined ? 'p.is_default = 1' : 'p.name = ?'} AND s.enabled = 1
       AND s.step_type IN ('embed', 'vector_store')
     ORDER BY s.sort_order, s.id`,
    pipeline === undefined ? [] : [pipeline],
  );
  const config = (type: string) => {
    const row = rows.find((r) => r.step_type === type);
    let parsed: unknown = {};
    try {
      parsed = row ? parseJsonColumn<unknown>(row.config, {}) : {};
    } catch {
      // a bad hand edit: planning names it; here the defaults hold
    }
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  };
  const embed = config('embed');
  const store = rows.some((r) => r.step_type === 'vector_store') ? config('vector_store') : {};
  const name = (value: unknown) =>
    typeof value === 'string' && /^[A-Za-z0-9_-]{1,100}$/.test(value) ? value : undefined;
  const chars = embed.max_embed_chars;
  return {
    collection: name(store.collection) ?? name(embed.collection) ?? 'documents',
    maxEmbedChars:
      typeof chars === 'number' && Number.isInteger(chars) && chars >= 50 ? chars : DEFAULT_MAX_EMBED_CHARS,
  };
}
