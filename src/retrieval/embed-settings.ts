import type { SqlExecutor } from '../db/sql.js';
import { DEFAULT_MAX_EMBED_CHARS } from '../embed/prepare.js';
import { ConfigError, ErrorCodes } from '../errors.js';
import { parseJsonColumn } from '../util/json.js';

export interface EmbedSettings {
  /** the collection the pipeline's points go to: its vector_store step's, else its embed step's */
  collection: string;
  /** the embed step's cap on the text an embedding model with a context window reads */
  maxEmbedChars: number;
  /** the embed step's own embedding model, when it names one (else the configured embedder's) */
  embedModel?: string;
}

const DEFAULT_COLLECTION = 'documents';

/** A step row's config as an object: {} for none, and for a bad hand edit (planning names it; here defaults hold). */
function stepConfig(row: { config: unknown } | undefined): Record<string, unknown> {
  let parsed: unknown = {};
  try {
    parsed = row ? parseJsonColumn<unknown>(row.config, {}) : {};
  } catch {
    // a bad hand edit: planning names it; here the defaults hold
  }
  return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
}

const collectionName = (value: unknown) =>
  typeof value === 'string' && /^[A-Za-z0-9_-]{1,100}$/.test(value) ? value : undefined;

/**
 * Where a pipeline (by name, or the default one as `cpe run` picks it: active, the only one marked default) puts
 * its vectors and how it embeds texts, read from its enabled embed and vector_store rows: search, context, ask and
 * verify look where the pipeline wrote, and embed a query (or a repaired chunk) as it did. Defaults ('documents',
 * 800 characters, the configured embedder) for what is not set, not readable, or not there.
 */
export async function embedSettings(db: SqlExecutor, pipeline?: string): Promise<EmbedSettings> {
  // MariaDB compares names without case and trailing spaces: the exact name is what counts, as in planning
  const pipelines =
    pipeline === undefined
      ? await db.query<{ id: number }>(
          "SELECT id FROM pipeline_configs WHERE is_default = 1 AND status = 'active' ORDER BY id",
        )
      : (
          await db.query<{ id: number; name: string }>(
            'SELECT id, name FROM pipeline_configs WHERE name = ?',
            [pipeline],
          )
        ).filter((r) => r.name === pipeline);
  if (pipeline !== undefined && pipelines.length === 0)
    throw new ConfigError(ErrorCodes.PIPELINE_NOT_FOUND, `pipeline '${pipeline}' not found`);
  // no default pipeline, or several: `cpe run` refuses to choose, and so the defaults hold here
  const rows =
    pipelines.length === 1
      ? await db.query<{ step_type: string; config: unknown }>(
          `SELECT step_type, config FROM pipeline_steps
           WHERE pipeline_id = ? AND enabled = 1 AND step_type IN ('embed', 'vector_store')
           ORDER BY sort_order, id`,
          [pipelines[0]!.id],
        )
      : [];
  const config = (type: string) => stepConfig(rows.find((r) => r.step_type === type));
  const embed = config('embed');
  const store = rows.some((r) => r.step_type === 'vector_store') ? config('vector_store') : {};
  const chars = embed.max_embed_chars;
  const model = embed.model;
  return {
    collection: collectionName(store.collection) ?? collectionName(embed.collection) ?? DEFAULT_COLLECTION,
    maxEmbedChars:
      typeof chars === 'number' && Number.isInteger(chars) && chars >= 50 ? chars : DEFAULT_MAX_EMBED_CHARS,
    ...(typeof model === 'string' && model.trim() !== '' && { embedModel: model }),
  };
}

/**
 * The collections each pipeline stores its chunk points into, by pipeline id, as its steps do it now: every
 * enabled vector_store step's collection, or, in a pipeline without one, every enabled embed step's (embed then
 * stores the points itself). A pipeline with neither stores none and is not in the map.
 */
export async function pointCollectionsByPipeline(db: SqlExecutor): Promise<Map<number, Set<string>>> {
  const rows = await db.query<{ pipeline_id: number; step_type: string; config: unknown }>(
    `SELECT pipeline_id, step_type, config FROM pipeline_steps
     WHERE enabled = 1 AND step_type IN ('embed', 'vector_store') ORDER BY pipeline_id, sort_order, id`,
  );
  const byPipeline = new Map<number, Array<(typeof rows)[number]>>();
  for (const row of rows) {
    const id = Number(row.pipeline_id);
    byPipeline.set(id, [...(byPipeline.get(id) ?? []), row]);
  }
  const collections = new Map<number, Set<string>>();
  for (const [id, steps] of byPipeline) {
    const stores = steps.filter((s) => s.step_type === 'vector_store');
    collections.set(
      id,
      new Set(
        (stores.length > 0 ? stores : steps).map(
          (s) => collectionName(stepConfig(s).collection) ?? DEFAULT_COLLECTION,
        ),
      ),
    );
  }
  return collections;
}
