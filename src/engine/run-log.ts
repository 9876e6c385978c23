import os from 'node:os';
import type { SqlExecutor } from '../db/sql.js';
import { inLists, marks, rowSlices } from '../db/statement-shapes.js';
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

/** What a run's records say of it so far (a run writes its totals when it ends; a dead one never does). */
export interface RunProgress {
  /** the documents it has worked on (with a step record) */
  docs: number;
  done: number;
  failed: number;
  stepsOk: number;
  stepsFailed: number;
  stepsSkipped: number;
  tokensIn: number;
  tokensOut: number;
}

/** A run's progress as the pipeline_runs columns its end writes (closeDeadRun; `cpe status` for a running run). */
export const progressColumns = (progress: RunProgress): Record<string, number> => ({
  docs_total: progress.docs,
  docs_done: progress.done,
  docs_failed: progress.failed,
  steps_ok: progress.stepsOk,
  steps_failed: progress.stepsFailed,
  steps_skipped: progress.stepsSkipped,
  tokens_in: progress.tokensIn,
  tokens_out: progress.tokensOut,
});

export interface RunLogOptions {
  /**
   * ki_content (it may be another database, on another server): a run's document counts as done there when its
   * queue item is done, that is when its completion committed. Its step records cannot say so: a killed run's last
   * documents have all of theirs and still wait for the commit, which never comes (the next run does them again).
   * Without it, the step records decide (documentsSoFar).
   */
  content?: SqlExecutor;
  /** how often a live run writes its heartbeat (RUN_HEARTBEAT_MS) */
  heartbeatMs?: number;
}

/** How often a live run sets its heartbeat_at in ki_dev: one UPDATE per run. */
export const RUN_HEARTBEAT_MS = 10_000;
/**
 * A run still marked running whose heartbeat is older than this is dead (killed, crashed, cut off from ki_dev), on
 * whichever machine it ran: six beats missed. A live run closed by mistake (ki_dev out of its reach for that long)
 * is running again with its next heartbeat, and writes its own outcome when it ends.
 */
export const RUN_DEAD_AFTER_MS = 60_000;

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
  /** whether the onLog callback has failed once (said on stderr the first time only) */
  private echoFailed = false;
  /** the heartbeats of this log's live runs, by run id, with the beat last sent */
  private readonly heartbeats = new Map<number, { timer: NodeJS.Timeout; last: Promise<void> }>();

  constructor(
    private readonly db: SqlExecutor,
    private readonly minLevel: LogLevel = 'info',
    private readonly echo?: (level: LogLevel, line: string) => void,
    private readonly options: RunLogOptions = {},
  ) {}

  async startRun(run: {
    pipelineId: number | null;
    pipelineName: string;
    versionHash: string | null;
    command: string;
    profile: unknown;
  }) {
    const now = sqlTime();
    const { insertId } = await this.db.run(
      `INSERT INTO pipeline_runs (pipeline_id, pipeline_name, version_hash, command, host, pid, status, profile, started_at,
         heartbeat_at)
       VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)`,
      [
        run.pipelineId,
        run.pipelineName,
        run.versionHash,
        run.command,
        os.hostname(),
        process.pid,
        JSON.stringify(run.profile),
        now,
        now,
      ],
    );
    this.startHeartbeat(insertId);
    return insertId;
  }

  /**
   * Sets the run's heartbeat_at every few seconds until finishRun: how a run that is gone is known on any machine
   * (closeRunsOfGoneProcesses). The timer does not keep the process alive.
   */
  private startHeartbeat(runId: number): void {
    const timer = setInterval(() => {
      const entry = this.heartbeats.get(runId);
      if (entry) entry.last = this.beat(runId);
    }, this.options.heartbeatMs ?? RUN_HEARTBEAT_MS);
    timer.unref();
    this.heartbeats.set(runId, { timer, last: Promise.resolve() });
  }

  /**
   * One heartbeat. A run another process closed as dead while it lived (its beats could not reach ki_dev) is
   * running again: only a closer marks a live run failed, as the run's own end comes after its last beat. A beat
   * that fails is not reported: the buffered rows' flush says on stderr that ki_dev cannot be written.
   */
  private async beat(runId: number): Promise<void> {
    try {
      await this.db.run(
        `UPDATE pipeline_runs SET heartbeat_at = ?, status = 'running', error = NULL, finished_at = NULL, duration_ms = NULL
         WHERE id = ? AND status IN ('running', 'failed')`,
        [sqlTime(), runId],
      );
    } catch {
      // not reported: see above
    }
  }

  /** Ends the run's heartbeat, once the beat in flight is written (it must not come after the run's outcome). */
  private async stopHeartbeat(runId: number): Promise<void> {
    const entry = this.heartbeats.get(runId);
    if (!entry) return;
    clearInterval(entry.timer);
    this.heartbeats.delete(runId);
    await entry.last;
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
    await this.stopHeartbeat(runId);
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
   * Runs still marked running whose process is gone (killed, crashed): failed, with the reason. Returns their ids.
   * Two signs of it: a process of this machine that no longer runs (SQLite only, like releaseLeasesOfGoneProcesses:
   * a MariaDB ki_dev is shared by machines, and two of them may carry the same host name; a pid that runs again,
   * reused by another process, is left alone), and on either database, whatever machine ran it, a heartbeat older
   * than RUN_DEAD_AFTER_MS (a worker killed while it held no lease: no claim ever takes one over from it).
   */
  async closeRunsOfGoneProcesses(): Promise<number[]> {
    const closed: number[] = [];
    if (this.db.dialect === 'sqlite') {
      const rows = await this.db.query<{ id: number; pid: number }>(
        `SELECT id, pid FROM pipeline_runs WHERE status = 'running' AND host = ?`,
        [os.hostname()],
      );
      const gone = rows.filter((r) => Number(r.pid) !== process.pid && !processAlive(Number(r.pid)));
      for (const { id, pid } of gone) {
        const reason = `process ${pid} ended without finishing the run (killed or crashed); its queue items were taken over`;
        if (await this.closeDeadRun(Number(id), reason)) closed.push(Number(id));
      }
    }
    return [...closed, ...(await this.closeSilentRuns())];
  }

  /** Runs marked running whose heartbeat stopped RUN_DEAD_AFTER_MS ago (from their start, for runs without one). */
  private async closeSilentRuns(): Promise<number[]> {
    const before = sqlTime(Date.now() - RUN_DEAD_AFTER_MS);
    const rows = await this.db.query<{ id: number; host: string; pid: number; seen: unknown }>(
      `SELECT id, host, pid, COALESCE(heartbeat_at, started_at) AS seen FROM pipeline_runs
       WHERE status = 'running' AND COALESCE(heartbeat_at, started_at) < ?`,
      [before],
    );
    const closed: number[] = [];
    for (const row of rows) {
      // this process's own runs are alive, however late their beat (an event loop held up)
      if (row.host === os.hostname() && Number(row.pid) === process.pid) continue;
      const seen = parseSqlTime(row.seen);
      const reason = `no heartbeat from process ${row.pid} on ${row.host} since ${seen ? sqlTime(seen) : '?'} (killed, crashed or cut off from ki_dev): the run did not finish`;
      if (await this.closeDeadRun(Number(row.id), reason, before)) closed.push(Number(row.id));
    }
    return closed;
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
      const reason = `worker ${worker} ended without finishing the run (killed, crashed or cut off); its queue items were taken over after their leases expired`;
      if (await this.closeDeadRun(Number(row.id), reason)) closed.push(Number(row.id));
    }
    return closed;
  }

  /**
   * A run whose process is gone: failed, ended now, with the counts its records say (it wrote none itself). With
   * `silentSince`, only while its heartbeat is still older than that (a beat that came meanwhile keeps it running).
   * False when it was not running any more.
   */
  private async closeDeadRun(id: number, reason: string, silentSince?: string): Promise<boolean> {
    const columns = progressColumns(await this.progressSoFar(id));
    const [run] = await this.db.query<{ started_at: unknown }>(
      'SELECT started_at FROM pipeline_runs WHERE id = ?',
      [id],
    );
    const started = parseSqlTime(run?.started_at);
    // until now: its real end came earlier, unseen
    const duration = started ? Math.max(0, Date.now() - started.getTime()) : null;
    const { affectedRows } = await this.db.run(
      `UPDATE pipeline_runs SET status = 'failed', error = ?, ${Object.keys(columns)
        .map((column) => `${column} = ?`)
        .join(', ')}, finished_at = ?, duration_ms = ?
       WHERE id = ? AND status = 'running'${silentSince ? ' AND COALESCE(heartbeat_at, started_at) < ?' : ''}`,
      [reason, ...Object.values(columns), sqlTime(), duration, id, ...(silentSince ? [silentSince] : [])],
    );
    return affectedRows > 0;
  }

  /**
   * What a run's records say of it so far: the documents it worked on, done and failed (documentsSoFar), its
   * steps and tokens. For a run that has not ended (`cpe status`, `cpe runs`) and one that never will (closeDeadRun).
   */
  async progressSoFar(id: number): Promise<RunProgress> {
    const [counts] = await this.db.query<Record<string, unknown>>(
      `SELECT COUNT(DISTINCT document_id) AS docs,
         SUM(CASE WHEN status = 'ok' THEN 1 ELSE 0 END) AS ok,
         SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
         SUM(CASE WHEN status = 'skipped' THEN 1 ELSE 0 END) AS skipped,
         SUM(tokens_in) AS tokens_in, SUM(tokens_out) AS tokens_out
       FROM pipeline_step_runs WHERE run_id = ?`,
      [id],
    );
    const n = (key: string) => Number(counts?.[key] ?? 0);
    const documents = await this.documentsSoFar(id);
    return {
      docs: n('docs'),
      done: documents.done,
      failed: documents.failed,
      stepsOk: n('ok'),
      stepsFailed: n('failed'),
      stepsSkipped: n('skipped'),
      tokensIn: n('tokens_in'),
      tokensOut: n('tokens_out'),
    };
  }

  /**
   * What a run's records say of its documents so far. Done: with ki_content (RunLogOptions.content), a document
   * whose queue item is done there (its completion committed); otherwise, and for step records without a queue
   * item, one where every step the run's documents went through has a record and none failed (a document in flight
   * has fewer). Failed: not done, and a step's last attempt failed.
   */
  async documentsSoFar(id: number): Promise<{ done: number; failed: number }> {
    const rows = await this.db.query<{
      document_id: number;
      queue_id: number | null;
      step_name: string;
      status: string;
    }>(
      'SELECT document_id, queue_id, step_name, status FROM pipeline_step_runs WHERE run_id = ? AND document_id IS NOT NULL ORDER BY id',
      [id],
    );
    const byDocument = new Map<number, { steps: Map<string, string>; items: Set<number> }>();
    for (const row of rows) {
      const document = byDocument.get(Number(row.document_id)) ?? { steps: new Map(), items: new Set() };
      byDocument.set(Number(row.document_id), document);
      document.steps.set(row.step_name, row.status); // in order: the last attempt's status stays
      if (row.queue_id !== null) document.items.add(Number(row.queue_id));
    }
    const completed = await this.completedItems([
      ...new Set([...byDocument.values()].flatMap((d) => [...d.items])),
    ]);
    let most = 0;
    for (const { steps } of byDocument.values()) most = Math.max(most, steps.size);
    let done = 0;
    let failed = 0;
    for (const { steps, items } of byDocument.values()) {
      const committed =
        completed && items.size > 0 ? [...items].some((item) => completed.has(item)) : undefined;
      if (committed) done++;
      else if ([...steps.values()].includes('failed')) failed++;
      else if (committed === undefined && steps.size === most) done++;
    }
    return { done, failed };
  }

  /** The queue items among `ids` that ki_content says are done; undefined without ki_content. */
  private async completedItems(ids: readonly number[]): Promise<Set<number> | undefined> {
    const content = this.options.content;
    if (!content) return undefined;
    const done = new Set<number>();
    for (const list of inLists(ids)) {
      const rows = await content.query<{ id: number }>(
        `SELECT id FROM pipeline_queue WHERE status = 'done' AND id IN (${list.marks})`,
        list.values,
      );
      for (const row of rows) done.add(Number(row.id));
    }
    return done;
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
        this.echoSafely(level, `${level}${where ? ` [${where}]` : ''}: ${shown}`);
      }
      this.schedule();
    };
    return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
  }

  /**
   * The caller's onLog with a line. Its failure is its own, never a document's, a run's or the process's: a callback
   * that throws (or an async one that rejects) inside a step's error handler failed that document and then ended the
   * process with an unhandled rejection. It is said once on stderr (not through the callback) and the line stays in
   * ki_dev.
   */
  private echoSafely(level: LogLevel, line: string): void {
    const told = (error: unknown) => {
      if (this.echoFailed) return;
      this.echoFailed = true;
      process.stderr.write(
        `cpe: the onLog callback failed (${describeError(error)}); ignored, its lines are in ki_dev\n`,
      );
    };
    try {
      const result: unknown = this.echo?.(level, line);
      if (result instanceof Promise) result.catch(told);
    } catch (error) {
      told(error);
    }
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
