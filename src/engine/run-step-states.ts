import { comparedName } from '../db/collation.js';
import type { SqlExecutor } from '../db/sql.js';
import { sqlTime } from '../util/time.js';
import { currentCheckpointHashes } from './checkpoints.js';
import type { PlannedStep } from './plan.js';

/** 'pending': documents were processed since the step last ran; 'ok' (or ended skipped) and 'failed': how it ran. */
export type RunStepStatus = 'pending' | 'ok' | 'failed';

export interface RunStepState {
  stepName: string;
  status: RunStepStatus;
  /** the step's lineage hash when it ran (the skipped variant when it ended skipped) */
  hash: string;
  runId: number | null;
  error: string | null;
}

/** A post step a run owes, and why (for the run's log). */
export interface OwedStep {
  step: PlannedStep;
  reason: string;
}

/** A pipeline's run_step_states, by step name as the database compares names. */
async function loadRunStepStates(db: SqlExecutor, pipelineId: number): Promise<Map<string, RunStepState>> {
  type Row = {
    step_name: string;
    status: RunStepStatus;
    config_hash: string;
    run_id: number | null;
    error: string | null;
  };
  const rows = await db.query<Row>(
    'SELECT step_name, status, config_hash, run_id, error FROM run_step_states WHERE pipeline_id = ?',
    [pipelineId],
  );
  const compared = comparedName(db);
  return new Map(
    rows.map((r) => [
      compared(r.step_name),
      {
        stepName: r.step_name,
        status: r.status,
        hash: r.config_hash,
        runId: r.run_id === null ? null : Number(r.run_id),
        error: r.error,
      },
    ]),
  );
}

/** Why a post step with this stored state is owed, or undefined when it is done under its current lineage. */
function owedBecause(
  step: PlannedStep,
  state: RunStepState | undefined,
  profileKeys: readonly string[],
): string | undefined {
  if (!state) return 'not run since it was added';
  if (state.status === 'failed') return `failed${state.runId === null ? '' : ` in run ${state.runId}`}`;
  if (state.status === 'pending') return 'not run since documents were processed';
  const current = currentCheckpointHashes(step.lineageHash, profileKeys).includes(state.hash);
  return current ? undefined : 'its config changed';
}

/**
 * The post steps (in plan order) that a run which processed no document still owes: those that failed, were never
 * run since documents were processed (a run cancelled, a worker, which runs none) or since their config changed (or
 * ended skipped under another LLM profile), and those after them that depend on one. A post step that is done under
 * its current lineage is not run again by an idle run.
 */
export async function owedPostSteps(
  db: SqlExecutor,
  pipelineId: number,
  postSteps: readonly PlannedStep[],
  profileKeys: readonly string[],
): Promise<OwedStep[]> {
  if (postSteps.length === 0) return [];
  const states = await loadRunStepStates(db, pipelineId);
  const compared = comparedName(db);
  const owed: OwedStep[] = [];
  for (const step of postSteps) {
    const because = owedBecause(step, states.get(compared(step.name)), profileKeys);
    const after = step.dependsOn.find((name) => owed.some((o) => o.step.name === name));
    if (because) owed.push({ step, reason: because });
    else if (after) owed.push({ step, reason: `it runs after '${after}'` });
  }
  return owed;
}

/**
 * Records the state of post steps (one statement per step, a handful per run): 'pending' for all of them once a run
 * has processed documents, then each one's outcome as it runs. A later state replaces the earlier one.
 */
export async function saveRunStepStates(
  db: SqlExecutor,
  pipelineId: number,
  runId: number,
  states: ReadonlyArray<{ step: PlannedStep; status: RunStepStatus; hash?: string; error?: string }>,
): Promise<void> {
  const now = sqlTime();
  for (const { step, status, hash, error } of states) {
    const values = [
      pipelineId,
      step.name,
      step.type,
      hash ?? step.lineageHash,
      status,
      runId,
      error ?? null,
      now,
    ];
    const insert =
      'INSERT INTO run_step_states (pipeline_id, step_name, step_type, config_hash, status, run_id, error, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
    await db.run(
      db.dialect === 'mysql'
        ? `${insert} ON DUPLICATE KEY UPDATE step_type = VALUES(step_type), config_hash = VALUES(config_hash),
           status = VALUES(status), run_id = VALUES(run_id), error = VALUES(error), updated_at = VALUES(updated_at)`
        : `${insert} ON CONFLICT (pipeline_id, step_name) DO UPDATE SET step_type = excluded.step_type,
           config_hash = excluded.config_hash, status = excluded.status, run_id = excluded.run_id,
           error = excluded.error, updated_at = excluded.updated_at`,
      values,
    );
  }
}

/**
 * The post steps of every pipeline that are owed for a stored reason (failed, or pending), for `cpe status`: of steps
 * still enabled in their pipeline (a step disabled or removed since is owed nothing).
 */
export async function unfinishedRunSteps(
  db: SqlExecutor,
): Promise<
  Array<{ pipeline: string; step: string; status: RunStepStatus; runId: number | null; error: string | null }>
> {
  const rows = await db.query<{
    pipeline: string;
    step_name: string;
    status: RunStepStatus;
    run_id: number | null;
    error: string | null;
  }>(
    `SELECT p.name AS pipeline, s.step_name, s.status, s.run_id, s.error
     FROM run_step_states s JOIN pipeline_configs p ON p.id = s.pipeline_id
     WHERE s.status <> 'ok' AND EXISTS (SELECT 1 FROM pipeline_steps ps WHERE ps.pipeline_id = s.pipeline_id
       AND ps.enabled = 1 AND COALESCE(NULLIF(TRIM(ps.name), ''), TRIM(ps.step_type)) = s.step_name)
     ORDER BY p.name, s.step_name`,
  );
  return rows.map((r) => ({
    pipeline: r.pipeline,
    step: r.step_name,
    status: r.status,
    runId: r.run_id === null ? null : Number(r.run_id),
    error: r.error,
  }));
}
