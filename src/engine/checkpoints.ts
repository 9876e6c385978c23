import type { SqlExecutor } from '../db/sql.js';
import { inList, rowSlices } from '../db/statement-shapes.js';
import { sha256 } from '../util/hash.js';
import { sqlTime } from '../util/time.js';
import type { PlannedStep } from './plan.js';

export interface CheckpointRow {
  documentId: number;
  pipelineId: number;
  stepName: string;
  stepType: string;
  /** the step's lineage hash (or the skipped-variant of it) */
  hash: string;
  runId: number;
  /**
   * Step types whose checkpoints of this document in OTHER pipelines this step's run makes stale: it wrote data
   * that they wrote too (a document's chunks are one set, whichever pipeline made them), so they must run again
   * there. Set only when other pipelines have checkpoints (see othersWriting).
   */
  supersedes?: readonly string[];
}

/** The checkpoint hash of a step that ended `skipped`: valid only while the provider profile stays the same. */
export const skippedCheckpointHash = (lineageHash: string, profileKey: string) =>
  `${sha256(lineageHash + profileKey).slice(0, 8)}:skipped`;

/**
 * The document steps (in plan order) that must run for a document with these checkpoints: a step whose checkpoint
 * does not match its lineage (none, another config or upstream, or ended skipped under another LLM profile), and
 * every step downstream of one that runs: its input is written anew even where its own lineage is unchanged (a
 * renamed step, a checkpoint a crash lost, data another pipeline replaced).
 */
export function stepsToRun(
  steps: readonly PlannedStep[],
  checkpoints: ReadonlyMap<string, string>,
  profileKey: string,
): Set<string> {
  const run = new Set<string>();
  for (const step of steps) {
    const hash = checkpoints.get(step.name);
    const current =
      hash !== undefined &&
      (hash === step.lineageHash || hash === skippedCheckpointHash(step.lineageHash, profileKey));
    if (!current || step.dependsOn.some((name) => run.has(name))) run.add(step.name);
  }
  return run;
}

/**
 * The step types that write what `step` writes (its own type among them): the ones whose checkpoints in other
 * pipelines its run makes stale. A plugin that declares no `writes` stands for its own type only.
 */
export function othersWriting(
  step: PlannedStep,
  plugins: ReadonlyArray<{ type: string; writes?: readonly string[] }>,
) {
  const writes = new Set(step.plugin.writes ?? []);
  const types = new Set([step.type]);
  for (const plugin of plugins) if (plugin.writes?.some((kind) => writes.has(kind))) types.add(plugin.type);
  return [...types].sort();
}

/**
 * Which steps of a document are done for a pipeline, with the lineage hash they were done with, and whether other
 * pipelines have checkpoints of it (then the steps run here supersede theirs: see CheckpointRow.supersedes). One
 * statement on the (document_id, ...) key.
 */
export async function loadCheckpoints(
  db: SqlExecutor,
  documentId: number,
  pipelineId: number,
): Promise<{ done: Map<string, string>; othersHave: boolean }> {
  const rows = await db.query<{ pipeline_id: number; step_name: string; config_hash: string }>(
    'SELECT pipeline_id, step_name, config_hash FROM step_checkpoints WHERE document_id = ?',
    [documentId],
  );
  const done = new Map<string, string>();
  let othersHave = false;
  for (const row of rows) {
    if (Number(row.pipeline_id) === pipelineId) done.set(row.step_name, row.config_hash);
    else othersHave = true;
  }
  return { done, othersHave };
}

/** Checkpoint rows per statement. */
const ROWS_PER_STATEMENT = 200;

/** Records finished steps (one statement per slice of rows); a step finished again replaces its row. */
export async function saveCheckpoints(db: SqlExecutor, rows: readonly CheckpointRow[]): Promise<void> {
  const now = sqlTime();
  for (const slice of rowSlices(db.dialect, rows, ROWS_PER_STATEMENT)) {
    const values = slice.flatMap((r) => [
      r.documentId,
      r.pipelineId,
      r.stepName,
      r.stepType,
      r.hash,
      r.runId,
      now,
    ]);
    const groups = slice.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ');
    const insert = `INSERT INTO step_checkpoints (document_id, pipeline_id, step_name, step_type, config_hash, run_id, created_at) VALUES ${groups}`;
    await db.run(
      db.dialect === 'mysql'
        ? `${insert} ON DUPLICATE KEY UPDATE step_type = VALUES(step_type), config_hash = VALUES(config_hash),
           run_id = VALUES(run_id), created_at = VALUES(created_at)`
        : `${insert} ON CONFLICT (document_id, pipeline_id, step_name) DO UPDATE SET step_type = excluded.step_type,
           config_hash = excluded.config_hash, run_id = excluded.run_id, created_at = excluded.created_at`,
      values,
    );
  }
  await dropSupersededCheckpoints(db, rows);
}

/** Deletes the other pipelines' checkpoints that `rows` supersede (one statement per document and pipeline). */
async function dropSupersededCheckpoints(db: SqlExecutor, rows: readonly CheckpointRow[]): Promise<void> {
  const byDocument = new Map<string, { documentId: number; pipelineId: number; types: Set<string> }>();
  for (const row of rows) {
    if (!row.supersedes?.length) continue;
    const key = `${row.documentId}:${row.pipelineId}`;
    const entry = byDocument.get(key) ?? {
      documentId: row.documentId,
      pipelineId: row.pipelineId,
      types: new Set(),
    };
    for (const type of row.supersedes) entry.types.add(type);
    byDocument.set(key, entry);
  }
  for (const { documentId, pipelineId, types } of byDocument.values()) {
    const list = inList([...types].sort());
    await db.run(
      `DELETE FROM step_checkpoints WHERE document_id = ? AND pipeline_id <> ? AND step_type IN (${list.marks})`,
      [documentId, pipelineId, ...list.values],
    );
  }
}
