import os from 'node:os';
import type { SqlExecutor } from '../db/sql.js';
import { marks, rowSlices } from '../db/statement-shapes.js';
import { describeError } from '../errors.js';
import { sqlTime } from '../util/time.js';
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

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

const FLUSH_ROWS = 200;
const FLUSH_MS = 250;

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

  recordStep(r: StepRunRecord): void {
    const { itemsIn, itemsOut, tokensIn, tokensOut, ...rest } = r.counts ?? {};
    this.stepRows.push([
      r.runId,
      r.documentId,
      r.queueId,
      r.stepName,
      r.stepType,
      r.status,
      r.reason ?? null,
      r.attempt,
      itemsIn ?? null,
      itemsOut ?? null,
      Object.keys(rest).length ? JSON.stringify(rest) : null,
      tokensIn ?? 0,
      tokensOut ?? 0,
      r.errorCode ?? null,
      r.error ?? null,
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
      this.logRows.push([
        scope.runId,
        level,
        scope.stepName ?? null,
        scope.documentId ?? null,
        message,
        context ? safeJson(context) : null,
        sqlTime(),
      ]);
      if (this.echo && LEVELS[level] >= LEVELS.warn) {
        const where = [scope.stepName, scope.documentId ? `doc ${scope.documentId}` : null]
          .filter(Boolean)
          .join(' ');
        this.echo(level, `${level}${where ? ` [${where}]` : ''}: ${message}`);
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
    const steps = this.stepRows;
    const logs = this.logRows;
    this.stepRows = [];
    this.logRows = [];
    this.flushing = this.flushing.then(async () => {
      try {
        await insertMany(
          this.db,
          'pipeline_step_runs',
          'run_id, document_id, queue_id, step_name, step_type, status, reason, attempt, items_in, items_out, counts, tokens_in, tokens_out, error_code, error, started_at, finished_at, duration_ms',
          steps,
        );
        await insertMany(
          this.db,
          'pipeline_log',
          'run_id, level, step_name, document_id, message, context, created_at',
          logs,
        );
      } catch (error) {
        process.stderr.write(`cpe: could not write to ki_dev: ${describeError(error, 300)}\n`);
      }
    });
    return this.flushing;
  }
}

async function insertMany(db: SqlExecutor, table: string, columns: string, rows: unknown[][]): Promise<void> {
  if (rows.length === 0) return;
  const group = `(${marks(rows[0]!.length)})`;
  // well under the drivers' placeholder limits
  for (const slice of rowSlices(db.dialect, rows, 100)) {
    await db.run(
      `INSERT INTO ${table} (${columns}) VALUES ${slice.map(() => group).join(', ')}`,
      slice.flat(),
    );
  }
}

function safeJson(value: unknown): string {
  try {
    const text = JSON.stringify(value);
    return text.length > 8000 ? `${text.slice(0, 8000)}…` : text;
  } catch {
    return '"(unserialisable context)"';
  }
}
