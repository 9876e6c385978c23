import os from 'node:os';
import type { SqlExecutor } from '../db/sql.js';
import { marks, rowSlices } from '../db/statement-shapes.js';
import { describeError, isRetryable } from '../errors.js';
import { redactCredentials } from '../util/credentials.js';
import { processAlive } from '../util/process-alive.js';
import { parseSqlTime, sqlTime } from '../util/time.js';
import type { Logger, StepCounts } from './plugin.js';

export interface StepRunRecord {
  runId: number;
  documentId: number | null;
  queueId: number | null;
  stepName: string;
  stepType: string;
  status: 'ok' | 'failed' | 'skipped';
  reason?: string | null;
  attempt: number;
  counts?: StepCounts;
  errorCode?: string | null;
  error?: string | null;
  startedAt: number;
  finishedAt: number;
}

export interface RunTotals {
  docsTotal: number;
  docsDone: number;
  docsFailed: number;
  docsSkipped: number;
  stepsOk: number;
  stepsFailed: number;
  stepsSkipped: number;
  tokensIn: number;
  tokensOut: number;
}

/** The totals of a run that has done nothing yet. */
export const noTotals = (): RunTotals => ({
  docsTotal: 0,
  docsDone: 0,
  docsFailed: 0,
  docsSkipped: 0,
  stepsOk: 0,
  stepsFailed: 0,
  stepsSkipped: 0,
  tokensIn: 0,
  tokensOut: 0,
});

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

const FLUSH_ROWS = 200;
const FLUSH_MS = 250;
/** rows kept for the next try while ki_dev cannot be written (a database that is down): the newest are kept */
const MAX_KEPT_ROWS = 20_000;

/**
 * Writes what happened to ki_dev. Step runs and log lines are buffered and written in multi-row inserts
 * (every 250 ms, every 200 rows, and at the end of the run); a failure to log is reported on stderr and never
 * changes a step's outcome.
 */
export class RunLog {
  private stepRows: unknown[][] = [];
  private logRows: unknown[][] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: SqlExecutor,
    private readonly minLevel: LogLevel = 'info',
    private readonly echo?: (level: LogLevel, line: string) => void,
  ) {}

  async startRun(run: {
    pipelineId: number | null;
    pipelineName: string;
    versionHash: string | null;
    command: string;
    profile: unknown;
  }) {
    const { insertId } = await this.db.run(
      `INSERT INTO pipeline_runs (pipeline_id, pipeline_name, version_hash, command, host, pid, status, profile, started_at)
       VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?)`,
      [
        run.pipelineId,
        run.pipelineName,
        run.versionHash,
        run.command,
        os.hostname(),
        process.pid,
        JSON.stringify(run.profile),
        sqlTime(),
      ],
    );
    return insertId;
  }

  /**
   * A run refused before it began (its pipeline invalid or not found): recorded as a failed run with the reason
   * and an error line, so that ki_dev shows every `cpe run`, the ones configuration stopped too.
   */
  async recordRefusedRun(run: { pipelineName: string; command: string; profile: unknown; error: string }) {
    const startedAt = Date.now();
    const runId = await this.startRun({ ...run, pipelineId: null, versionHash: null });
    this.logger({ runId }).error(`run refused: ${run.error}`);
    await this.finishRun(runId, 'failed', noTotals(), startedAt, run.error);
    return runId;
  }

  async finishRun(
    runId: number,
    status: 'ok' | 'failed' | 'cancelled',
    totals: RunTotals,
    startedAt: number,
    error?: string,
  ) {
    await this.flush();
    const finished = Date.now();
    await this.db.run(
      `UPDATE pipeline_runs SET status = ?, docs_total = ?, docs_done = ?, docs_failed = ?, docs_skipped = ?, steps_ok = ?,
         steps_failed = ?, steps_skipped = ?, tokens_in = ?, tokens_out = ?, error = ?, finished_at = ?, duration_ms = ?
       WHERE id = ?`,
      [
        status,
        totals.docsTotal,
        totals.docsDone,
        totals.docsFailed,
        totals.docsSkipped,
        totals.stepsOk,
        totals.stepsFailed,
        totals.stepsSkipped,
        totals.tokensIn,
        totals.tokensOut,
        error ?? null,
        sqlTime(finished),
        finished - startedAt,
        runId,
      ],
    );
  }

  /**
   * Runs of this machine still marked running whose process is gone (killed, crashed): failed, with the reason.
   * Returns their ids. A pid that runs again (reused by another process) is left alone: not sure, not touched.
   * SQLite only, like releaseLeasesOfGoneProcesses: a MariaDB ki_dev is shared by machines, and two of them may
   * carry the same host name.
   */
  async closeRunsOfGoneProcesses(): Promise<number[]> {
    if (this.db.dialect !== 'sqlite') return [];
    const rows = await this.db.query<{ id: number; pid: number }>(
      `SELECT id, pid FROM pipeline_runs WHERE status = 'running' AND host = ?`,
      [os.hostname()],
    );
    const gone = rows.filter((r) => Number(r.pid) !== process.pid && !processAlive(Number(r.pid)));
    for (const { id, pid } of gone)
      await this.closeDeadRun(
        Number(id),
        `process ${pid} ended without finishing the run (killed or crashed); its queue items were taken over`,
      );
    return gone.map((r) => Number(r.id));
  }

  /**
   * The runs of the workers whose expired leases a claim took over (`host:pid:run`, on any machine): their process
   * ended without finishing them (a MariaDB queue is shared by machines, so this is how a run of another host is
   * known to be gone). Returns the ids closed.
   */
  async closeRunsOfWorkers(workers: readonly string[]): Promise<number[]> {
    const closed: number[] = [];
    for (const worker of new Set(workers)) {
      const match = /^(.*):(\d+):(\d+)$/.exec(worker);
      if (!match) continue;
      const [, host, pid, run] = match;
      const [row] = await this.db.query<{ id: number }>(
        "SELECT id FROM pipeline_runs WHERE id = ? AND host = ? AND pid = ? AND status = 'running'",
        [Number(run), host, Number(pid)],
      );
      if (!row) continue;
      await this.closeDeadRun(
        Number(row.id),
        `worker ${worker} ended without finishing the run (killed, crashed or cut off); its queue items were taken over after their leases expired`,
      );
      closed.push(Number(row.id));
    }
    return closed;
  }

  /** A run whose process is gone: failed, ended now, with the counts its step records say (it wrote none itself). */
  private async closeDeadRun(id: number, reason: string): Promise<void> {
    const [counts] = await this.db.query<Record<string, unknown>>(
      `SELECT COUNT(DISTINCT document_id) AS docs,
         SUM(CASE WHEN status = 'ok' THEN 1 ELSE 0 END) AS ok,
         SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
         SUM(CASE WHEN status = 'skipped' THEN 1 ELSE 0 END) AS skipped,
         SUM(tokens_in) AS tokens_in, SUM(tokens_out) AS tokens_out,
         (SELECT started_at FROM pipeline_runs WHERE id = ?) AS started_at
       FROM pipeline_step_runs WHERE run_id = ?`,
      [id, id],
    );
    const n = (key: string) => Number(counts?.[key] ?? 0);
    const documents = await this.documentsSoFar(id);
    const started = parseSqlTime(counts?.started_at);
    // until now: its real end came earlier, unseen
    const duration = started ? Math.max(0, Date.now() - started.getTime()) : null;
    await this.db.run(
      `UPDATE pipeline_runs SET status = 'failed', error = ?, docs_total = ?, docs_done = ?, docs_failed = ?,
         steps_ok = ?, steps_failed = ?, steps_skipped = ?, tokens_in = ?, tokens_out = ?, finished_at = ?,
         duration_ms = ?
       WHERE id = ? AND status = 'running'`,
      [
        reason,
        n('docs'),
        documents.done,
        documents.failed,
        n('ok'),
        n('failed'),
        n('skipped'),
        n('tokens_in'),
        n('tokens_out'),
        sqlTime(),
        duration,
        id,
      ],
    );
  }

  /**
   * What a run's step records say of its documents so far (a run writes its totals when it ends; a dead one never
   * does): failed, when a step's last attempt failed; done, when none did and every step the run's documents went
   * through has a record (a document in flight has fewer).
   */
  async documentsSoFar(id: number): Promise<{ done: number; failed: number }> {
    const rows = await this.db.query<{ document_id: number; step_name: string; status: string }>(
      'SELECT document_id, step_name, status FROM pipeline_step_runs WHERE run_id = ? AND document_id IS NOT NULL ORDER BY id',
      [id],
    );
    const byDocument = new Map<number, Map<string, string>>();
    for (const row of rows) {
      const steps = byDocument.get(Number(row.document_id)) ?? new Map<string, string>();
      byDocument.set(Number(row.document_id), steps);
      steps.set(row.step_name, row.status); // in order: the last attempt's status stays
    }
    let most = 0;
    for (const steps of byDocument.values()) most = Math.max(most, steps.size);
    let done = 0;
    let failed = 0;
    for (const steps of byDocument.values()) {
      if ([...steps.values()].includes('failed')) failed++;
      else if (steps.size === most) done++;
    }
    return { done, failed };
  }

  recordStep(r: StepRunRecord): void {
    const { itemsIn, itemsOut, tokensIn, tokensOut, ...reported } = r.counts ?? {};
    const rest: Record<string, unknown> = reported;
    // the INT columns take whole numbers in their range; anything else a plugin reported goes to the counts JSON
    const column = (key: string, value: unknown): number | null => {
      if (value === undefined || value === null) return null;
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= INT_MAX)
        return value;
      rest[key] = typeof value === 'number' && !Number.isFinite(value) ? String(value) : value; // JSON has no NaN
      return null;
    };
    const items = [column('itemsIn', itemsIn), column('itemsOut', itemsOut)];
    const tokens = [column('tokensIn', tokensIn) ?? 0, column('tokensOut', tokensOut) ?? 0];
    this.stepRows.push([
      r.runId,
      r.documentId,
      r.queueId,
      r.stepName,
      r.stepType,
      r.status,
      r.reason === undefined || r.reason === null ? null : redactCredentials(clipText(String(r.reason))),
      r.attempt,
      ...items,
      Object.keys(rest).length ? safeJson(rest) : null,
      ...tokens,
      r.errorCode ?? null,
      r.error ? redactCredentials(r.error) : null,
      sqlTime(r.startedAt),
      sqlTime(r.finishedAt),
      Math.max(0, Math.round(r.finishedAt - r.startedAt)),
    ]);
    this.schedule();
  }

  /** A logger scoped to {run, step, document}; lines below the configured level are dropped. */
  logger(scope: { runId: number | null; stepName?: string | null; documentId?: number | null }): Logger {
    const write = (level: LogLevel) => (message: string, context?: Record<string, unknown>) => {
      if (LEVELS[level] < LEVELS[this.minLevel]) return;
      const shown = redactCredentials(clipText(message));
      this.logRows.push([
        scope.runId,
        level,
        scope.stepName ?? null,
        scope.documentId ?? null,
        shown,
        context ? redactCredentials(safeJson(context)) : null,
        sqlTime(),
      ]);
      if (this.echo && LEVELS[level] >= LEVELS.warn) {
        const where = [scope.stepName, scope.documentId ? `doc ${scope.documentId}` : null]
          .filter(Boolean)
          .join(' ');
        this.echo(level, `${level}${where ? ` [${where}]` : ''}: ${shown}`);
      }
      this.schedule();
    };
    return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
  }

  private schedule(): void {
    if (this.stepRows.length + this.logRows.length >= FLUSH_ROWS) {
      void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Writes everything buffered so far. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.flushing = this.flushing.then(async () => {
      // the rows buffered when this flush's turn comes: a failed flush before it put its rows back in front,
      // so they go first and in order
      const steps = this.stepRows;
      const logs = this.logRows;
      this.stepRows = [];
      this.logRows = [];
      const unwritten = { steps, logs };
      try {
        unwritten.steps = await insertAllOrEach(
          this.db,
          'pipeline_step_runs',
          'run_id, document_id, queue_id, step_name, step_type, status, reason, attempt, items_in, items_out, counts, tokens_in, tokens_out, error_code, error, started_at, finished_at, duration_ms',
          steps,
        );
        unwritten.logs = await insertAllOrEach(
          this.db,
          'pipeline_log',
          'run_id, level, step_name, document_id, message, context, created_at',
          logs,
        );
      } catch (error) {
        // what did not go in is tried again with the next flush (a database that is down for a while loses no
        // rows; the oldest go only past MAX_KEPT_ROWS)
        const failed = error as Error & { unwritten?: unknown[][] };
        if (failed.unwritten) {
          if (unwritten.steps === steps) unwritten.steps = failed.unwritten;
          else unwritten.logs = failed.unwritten;
        }
        this.stepRows = [...unwritten.steps, ...this.stepRows];
        this.logRows = [...unwritten.logs, ...this.logRows];
        const kept = this.stepRows.length + this.logRows.length;
        const over = Math.max(0, kept - MAX_KEPT_ROWS);
        if (over > 0) this.logRows.splice(0, Math.min(over, this.logRows.length));
        process.stderr.write(
          `cpe: could not write to ki_dev (${Math.min(kept, MAX_KEPT_ROWS)} rows kept for the next try${over ? `, ${over} oldest log rows dropped` : ''}): ${describeError(error, 300)}\n`,
        );
        this.schedule();
      }
    });
    return this.flushing;
  }
}

/**
 * insertMany, and where the database refuses a slice (a value out of a column's range, say: not a connection that
 * failed, which throws for a later try), the slice's rows one by one: only the rows refused alone are lost, and
 * said so on stderr, not the run's other records in the same statement.
 */
async function insertAllOrEach(
  db: SqlExecutor,
  table: string,
  columns: string,
  rows: unknown[][],
): Promise<unknown[][]> {
  let left = rows;
  while (left.length > 0) {
    try {
      return await insertMany(db, table, columns, left);
    } catch (error) {
      if (isRetryable(error)) throw error;
      const unwritten = (error as { unwritten?: unknown[][] }).unwritten ?? left;
      // the refused slice row by row; a row refused alone is dropped
      const slice = unwritten.slice(0, 100);
      for (const [i, row] of slice.entries()) {
        try {
          await insertMany(db, table, columns, [row]);
        } catch (rowError) {
          if (isRetryable(rowError))
            throw Object.assign(rowError as Error, { unwritten: unwritten.slice(i) });
          process.stderr.write(
            `cpe: ki_dev refused a row of ${table}, which is not kept: ${describeError(rowError, 300)}\n`,
          );
        }
      }
      left = unwritten.slice(slice.length);
    }
  }
  return [];
}

/**
 * Inserts the rows, a statement per slice; returns [] when all went in. A failing slice throws with the rows not
 * written yet (it and the ones after it) as `unwritten`: the slices before it are in.
 */
async function insertMany(
  db: SqlExecutor,
  table: string,
  columns: string,
  rows: unknown[][],
): Promise<unknown[][]> {
  if (rows.length === 0) return [];
  const group = `(${marks(rows[0]!.length)})`;
  let written = 0;
  // well under the drivers' placeholder limits
  for (const slice of rowSlices(db.dialect, rows, 100)) {
    try {
      await db.run(
        `INSERT INTO ${table} (${columns}) VALUES ${slice.map(() => group).join(', ')}`,
        slice.flat(),
      );
    } catch (error) {
      throw Object.assign(error instanceof Error ? error : new Error(String(error)), {
        unwritten: rows.slice(written),
      });
    }
    written += slice.length;
  }
  return [];
}

/** The largest value of an INT column (items_in, items_out, tokens_in, tokens_out of pipeline_step_runs). */
const INT_MAX = 2 ** 31 - 1;

/** Longest log message, skip reason and log context kept (characters); MariaDB's TEXT holds 64 KB. */
const MAX_MESSAGE = 4000;
const MAX_CONTEXT = 8000;

/** A text cut to `max` characters, saying how much was left out. */
export function clipText(text: string, max = MAX_MESSAGE): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}

/** The context as JSON, still JSON when it is too long: then the start of its text, marked as cut. */
function safeJson(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text.length > MAX_CONTEXT
      ? JSON.stringify({ truncated: true, chars: text.length, start: text.slice(0, MAX_CONTEXT) })
      : text;
  } catch {
    return '"(unserialisable context)"';
  }
}
