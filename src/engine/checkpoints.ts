import { comparedName } from '../db/collation.js';
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
  /**
   * Names of this pipeline's checkpoints of this document that this step's run makes stale: steps no longer in
   * the plan (disabled or renamed) of a type that writes what this step wrote. Kept, such a checkpoint would make
   * the step look current when it comes back, over data another step has replaced since. Steps in the plan keep
   * theirs even when they write the same kind of data (see supersededBy).
   */
  replaces?: readonly string[];
}

/** The checkpoint hash of a step that ended `skipped`: valid only while the provider profile stays the same. */
export const skippedCheckpointHash = (lineageHash: string, profileKey: string) =>
  `${sha256(lineageHash + profileKey).slice(0, 8)}:skipped`;

/**
 * The checkpoint hashes that say a step with this lineage is done: its lineage, and its skipped hash under each of
 * the profile keys that still count (Engine settings `profileKeys`: the current one first, then the one cpe used
 * before, so that checkpoints written before are not all made stale by the change of how the key is made).
 */
/** The profile keys of an engine's settings that still count, the current one first (see currentCheckpointHashes). */
export const profileKeysOf = (settings: Readonly<Record<string, unknown>>): readonly string[] =>
  Array.isArray(settings.profileKeys) ? (settings.profileKeys as string[]) : [String(settings.profileKey)];

export const currentCheckpointHashes = (lineageHash: string, profileKeys: readonly string[]): string[] => [
  lineageHash,
  ...profileKeys.map((key) => skippedCheckpointHash(lineageHash, key)),
];

/**
 * The document steps (in plan order) that must run for a document with these checkpoints: a step whose checkpoint
 * does not match its lineage (none, another config or upstream, or ended skipped under another LLM profile), and
 * every step downstream of one that runs: its input is written anew even where its own lineage is unchanged (a
 * renamed step, a checkpoint a crash lost, data another pipeline replaced).
 */
export function stepsToRun(
  steps: readonly PlannedStep[],
  checkpoints: ReadonlyMap<string, string>,
  profileKeys: readonly string[],
): Set<string> {
  const run = new Set<string>();
  for (const step of steps) {
    const hash = checkpoints.get(step.name);
    const current =
      hash !== undefined && currentCheckpointHashes(step.lineageHash, profileKeys).includes(hash);
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

/** Whether a step name is one of the plan's document steps, compared as the database compares step names. */
export type InPlan = (stepName: string) => boolean;

/** The InPlan test for these document steps (made once per run). */
export function inPlan(db: Pick<SqlExecutor, 'dialect'>, steps: readonly PlannedStep[]): InPlan {
  const compared = comparedName(db);
  const names = new Set(steps.map((step) => compared(step.name)));
  return (stepName) => names.has(compared(stepName));
}

export interface StoredCheckpoints {
  /** the pipeline's checkpoints: lineage hash by step name */
  done: Map<string, string>;
  /** whether other pipelines have checkpoints of the document (see CheckpointRow.supersedes) */
  othersHave: boolean;
  /** the pipeline's checkpoints of steps not in the plan, with their step type (see CheckpointRow.replaces) */
  unplanned: Array<{ name: string; type: string }>;
}

/**
 * Which steps of a document are done for a pipeline, with the lineage hash they were done with, whether other
 * pipelines have checkpoints of it, and which of the pipeline's checkpoints belong to steps no longer in the plan
 * (the steps run here may supersede both: see supersededBy). One statement on the (document_id, ...) key.
 */
export async function loadCheckpoints(
  db: SqlExecutor,
  documentId: number,
  pipelineId: number,
  planned: InPlan,
): Promise<StoredCheckpoints> {
  type Row = { pipeline_id: number; step_name: string; step_type: string; config_hash: string };
  const rows = await db.query<Row>(
    'SELECT pipeline_id, step_name, step_type, config_hash FROM step_checkpoints WHERE document_id = ?',
    [documentId],
  );
  const done = new Map<string, string>();
  const unplanned: StoredCheckpoints['unplanned'] = [];
  let othersHave = false;
  for (const row of rows) {
    if (Number(row.pipeline_id) !== pipelineId) othersHave = true;
    else {
      done.set(row.step_name, row.config_hash);
      if (!planned(row.step_name)) unplanned.push({ name: row.step_name, type: row.step_type });
    }
  }
  return { done, othersHave, unplanned };
}

/**
 * What a step's run makes stale of a document's stored checkpoints, given the step types that write what it
 * writes (othersWriting): those types' checkpoints in other pipelines, and this pipeline's checkpoints of those
 * types whose steps are not in the plan. Empty when there is nothing to drop (the usual case).
 */
export function supersededBy(
  types: readonly string[],
  stored: StoredCheckpoints,
): Pick<CheckpointRow, 'supersedes' | 'replaces'> {
  const replaces = stored.unplanned.filter((c) => types.includes(c.type)).map((c) => c.name);
  return { ...(stored.othersHave && { supersedes: types }), ...(replaces.length > 0 && { replaces }) };
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

/**
 * Deletes the checkpoints that `rows` make stale: the other pipelines' ones of the types they supersede, and their
 * own pipeline's ones of the steps they replace (CheckpointRow.supersedes, .replaces). One statement per document
 * and pipeline, none for rows that make nothing stale.
 */
async function dropSupersededCheckpoints(db: SqlExecutor, rows: readonly CheckpointRow[]): Promise<void> {
  const byDocument = new Map<
    string,
    { documentId: number; pipelineId: number; types: Set<string>; names: Set<string> }
  >();
  for (const row of rows) {
    if (!row.supersedes?.length && !row.replaces?.length) continue;
    const key = `${row.documentId}:${row.pipelineId}`;
    const entry = byDocument.get(key) ?? {
      documentId: row.documentId,
      pipelineId: row.pipelineId,
      types: new Set(),
      names: new Set(),
    };
    for (const type of row.supersedes ?? []) entry.types.add(type);
    for (const name of row.replaces ?? []) entry.names.add(name);
    byDocument.set(key, entry);
  }
  for (const { documentId, pipelineId, types, names } of byDocument.values()) {
    const where: string[] = [];
    const params: unknown[] = [documentId];
    if (types.size > 0) {
      const list = inList([...types].sort());
      where.push(`(pipeline_id <> ? AND step_type IN (${list.marks}))`);
      params.push(pipelineId, ...list.values);
    }
    if (names.size > 0) {
      const list = inList([...names].sort());
      where.push(`(pipeline_id = ? AND step_name IN (${list.marks}))`);
      params.push(pipelineId, ...list.values);
    }
    await db.run(`DELETE FROM step_checkpoints WHERE document_id = ? AND (${where.join(' OR ')})`, params);
  }
}
