import type { SqlExecutor } from '../db/sql.js';
import { rowSlices } from '../db/statement-shapes.js';
import { sqlTime } from '../util/time.js';

export interface CheckpointRow {
  documentId: number;
  pipelineId: number;
  stepName: string;
  stepType: string;
  /** the step's lineage hash (or the skipped-variant of it) */
  hash: string;
  runId: number;
}

/** Which steps of a document are done for a pipeline, with the lineage hash they were done with. */
export async function loadCheckpoints(
  db: SqlExecutor,
  documentId: number,
  pipelineId: number,
): Promise<Map<string, string>> {
  const rows = await db.query<{ step_name: string; config_hash: string }>(
    'SELECT step_name, config_hash FROM step_checkpoints WHERE document_id = ? AND pipeline_id = ?',
    [documentId, pipelineId],
  );
  return new Map(rows.map((r) => [r.step_name, r.config_hash]));
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
}
