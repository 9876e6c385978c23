import os from 'node:os';
import type { DocumentRow } from '../db/entities.js';
import type { SqlExecutor } from '../db/sql.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';
import { supersededReason } from './documents.js';
import type { Engine } from './engine.js';
import { releaseLeasesOfGoneProcesses } from './queue.js';
import { progressColumns, RunLog } from './run-log.js';
import { unfinishedRunSteps } from './run-step-states.js';
import { storedFilePath } from './scan.js';

const countBy = async (db: SqlExecutor, sql: string): Promise<Record<string, number>> => {
  const rows = await db.query<{ k: string; n: number }>(sql);
  return Object.fromEntries(rows.map((r) => [r.k, Number(r.n)]));
};

export interface StatusReport {
  profile: Record<string, string>;
  queue: Record<string, number>;
  documents: Record<string, number>;
  chunks: { total: number; waitingForEmbedding: number; embedded: number; failed: number };
  workers: Array<{ worker: string; items: number; since: string | null }>;
  expiredLeases: Array<{ id: number; path: string; lockedBy: string | null; lockedUntil: string | null }>;
  recentFailures: Array<{
    id: number;
    path: string;
    status: string;
    attempts: number;
    lastError: string | null;
  }>;
  runs: Array<Record<string, unknown>>;
  /**
   * Run-scoped steps after the documents (index_optimize, custom post steps) that failed, or were not run since
   * documents were processed: the next run of their pipeline runs them, even when it finds no documents.
   */
  runStepsOwed: Array<{
    pipeline: string;
    step: string;
    status: string;
    runId: number | null;
    error: string | null;
  }>;
}

/** The columns of `cpe status`'s runs (`cpe runs` shows them all). */
const STATUS_RUN_COLUMNS = [
  'id',
  'pipeline_name',
  'status',
  'docs_total',
  'docs_done',
  'docs_failed',
  'duration_ms',
  'started_at',
  'tokens_in',
  'tokens_out',
  'error',
] as const;

/** a version `d` no newer done version of its file has replaced */
const NOT_REPLACED = `NOT EXISTS
  (SELECT 1 FROM documents n WHERE n.source_path = d.source_path AND n.version > d.version AND n.status = 'done')`;

/**
 * Everything `cpe status` shows, as data. A lease of a process of this machine that is gone (killed, crashed;
 * SQLite files only) is first ended as the next run would end it: status would otherwise show the dead process
 * holding its items until then. Its runs are those of `cpe runs` (lastRuns).
 */
export async function statusReport(engine: Engine, runCount = 5): Promise<StatusReport> {
  const db = engine.dbs.content.sql;
  const runs = await lastRuns(engine, runCount);
  await releaseLeasesOfGoneProcesses(db, os.hostname());
  const now = sqlTime();
  // the chunks of the versions searched now and of those on their way (a failed or replaced version's chunks wait for
  // nothing: its file is saved again, or `cpe retry` runs it)
  const chunkCounts = await countBy(
    db,
    `SELECT c.status AS k, COUNT(*) AS n FROM chunks c JOIN documents d ON d.id = c.document_id
     WHERE d.status = 'done' AND d.is_latest = 1 OR d.status IN ('pending', 'processing') AND ${NOT_REPLACED}
     GROUP BY c.status`,
  );
  const workers = await db.query<{ locked_by: string; n: number; since: string | null }>(
    `SELECT locked_by, COUNT(*) AS n, MIN(updated_at) AS since FROM pipeline_queue
     WHERE status = 'processing' AND locked_by IS NOT NULL AND locked_until >= ? GROUP BY locked_by ORDER BY locked_by`,
    [now],
  );
  const expired = await db.query<{
    id: number;
    path: string;
    locked_by: string | null;
    locked_until: string | null;
  }>(
    "SELECT id, path, locked_by, locked_until FROM pipeline_queue WHERE status = 'processing' AND locked_until < ? ORDER BY id LIMIT 20",
    [now],
  );
  const failures = await db.query<{
    id: number;
    path: string;
    status: string;
    attempts: number;
    last_error: string | null;
  }>(
    "SELECT id, path, status, attempts, last_error FROM pipeline_queue WHERE status IN ('failed', 'dead') ORDER BY updated_at DESC LIMIT 10",
  );
  return {
    profile: engine.profile,
    queue: await countBy(db, 'SELECT status AS k, COUNT(*) AS n FROM pipeline_queue GROUP BY status'),
    documents: await countBy(
      db,
      // current versions, and versions not done that no newer done version of their file has replaced (a failed
      // bad save counts until the file is saved again)
      `SELECT status AS k, COUNT(*) AS n FROM documents d WHERE d.is_latest = 1 OR (d.status <> 'done' AND ${NOT_REPLACED})
       GROUP BY status`,
    ),
    chunks: {
      total: Object.values(chunkCounts).reduce((a, b) => a + b, 0),
      waitingForEmbedding: chunkCounts.pending ?? 0,
      embedded: chunkCounts.embedded ?? 0,
      failed: chunkCounts.failed ?? 0,
    },
    workers: workers.map((w) => ({ worker: w.locked_by, items: Number(w.n), since: w.since })),
    expiredLeases: expired.map((e) => ({
      id: Number(e.id),
      path: e.path,
      lockedBy: e.locked_by,
      lockedUntil: e.locked_until,
    })),
    recentFailures: failures.map((f) => ({
      id: Number(f.id),
      path: f.path,
      status: f.status,
      attempts: Number(f.attempts),
      lastError: f.last_error,
    })),
    runs: runs.map((r) => Object.fromEntries(STATUS_RUN_COLUMNS.map((column) => [column, r[column]]))),
    runStepsOwed: await unfinishedRunSteps(db),
  };
}

async function closeRunsOfGoneProcesses(engine: Engine): Promise<RunLog> {
  const runLog = new RunLog(engine.dbs.log.sql, 'info', undefined, { content: engine.dbs.content.sql });
  await runLog.closeRunsOfGoneProcesses();
  return runLog;
}

/**
 * One run's row in ki_dev (the latest without an id), its process's death recorded first as for `lastRuns`: `cpe
 * logs` showed a killed run as running while `cpe runs` showed it failed.
 */
export async function runRecord(engine: Engine, id?: number): Promise<Record<string, any> | undefined> {
  await closeRunsOfGoneProcesses(engine);
  const [run] =
    id === undefined
      ? await engine.dbs.log.sql.query<Record<string, any>>(
          'SELECT * FROM pipeline_runs ORDER BY id DESC LIMIT 1',
        )
      : await engine.dbs.log.sql.query<Record<string, any>>('SELECT * FROM pipeline_runs WHERE id = ?', [id]);
  return run;
}

/**
 * The last `count` runs in ki_dev, newest first, as `cpe status` and `cpe runs` both show them. A run whose process
 * is gone is first closed as the next run would close it (RunLog.closeRunsOfGoneProcesses): it would show running
 * for ever otherwise. A running run writes its totals only when it ends: its documents (the ones it has worked on
 * so far), done (completion committed in ki_content), failed, steps and tokens are what its records say now.
 */
export async function lastRuns(engine: Engine, count: number): Promise<Array<Record<string, unknown>>> {
  const runLog = await closeRunsOfGoneProcesses(engine);
  const runs = await engine.dbs.log.sql.query<Record<string, unknown>>(
    `SELECT * FROM pipeline_runs ORDER BY id DESC LIMIT ${Math.max(1, Math.floor(count))}`,
  );
  const shown: Array<Record<string, unknown>> = [];
  for (const run of runs) {
    const id = Number(run.id);
    shown.push(
      run.status === 'running'
        ? { ...run, id, ...progressColumns(await runLog.progressSoFar(id)) }
        : { ...run, id },
    );
  }
  return shown;
}

export interface DocumentStatus {
  document: Record<string, unknown>;
  ocrNeeded: boolean;
  queue: Array<Record<string, unknown>>;
  steps: Array<{
    step: string;
    type: string;
    status: string;
    attempts: number;
    durationMs: number;
    startedAt: string;
    reason: string | null;
    error: string | null;
    counts: Record<string, unknown>;
  }>;
  chunks: number;
  pages: number;
  /** why this version is not the file's current one (superseded by a newer version, deleted), else null */
  notCurrent: string | null;
}

/**
 * `cpe status --doc=ID|PATH`: one document and the state of each of its steps. A path is looked up as the scan
 * stores it (storedFilePath): through a link to the source folder (`--source=link`), documents are stored under
 * the folder's real path, and the path the user ran cpe with found none; a file gone since is found as well.
 */
export async function documentStatus(engine: Engine, idOrPath: string): Promise<DocumentStatus | undefined> {
  const db = engine.dbs.content.sql;
  const rows = /^\d+$/.test(idOrPath)
    ? await db.query<Record<string, any>>('SELECT * FROM documents WHERE id = ?', [Number(idOrPath)])
    : await db.query<Record<string, any>>(
        'SELECT * FROM documents WHERE source_path = ? ORDER BY version DESC LIMIT 1',
        [await storedFilePath(db, idOrPath)],
      );
  const doc = rows[0];
  if (!doc) return undefined;
  const id = Number(doc.id);
  const metadata = parseJsonColumn<Record<string, unknown>>(doc.metadata, {});
  const [extract] = await db.query<{ ocr_needed: number }>(
    'SELECT ocr_needed FROM document_extracts WHERE document_id = ?',
    [id],
  );
  const queue = await db.query<Record<string, unknown>>(
    'SELECT id, action, status, attempts, max_attempts, last_error, locked_by, updated_at FROM pipeline_queue WHERE document_id = ? ORDER BY id',
    [id],
  );
  const stepRows = await engine.dbs.log.sql.query<Record<string, any>>(
    'SELECT * FROM pipeline_step_runs WHERE document_id = ? ORDER BY id',
    [id],
  );
  // the latest run's record per step wins; attempts = the highest attempt number seen in that run
  const latest = new Map<string, Record<string, any>>();
  for (const row of stepRows) {
    const previous = latest.get(row.step_name);
    if (!previous || Number(row.run_id) >= Number(previous.run_id)) latest.set(row.step_name, row);
  }
  const count = async (table: string) =>
    Number(
      (await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE document_id = ?`, [id]))[0]
        ?.n ?? 0,
    );
  return {
    document: { ...doc, id, metadata },
    ocrNeeded: Boolean(Number(extract?.ocr_needed ?? 0)) || metadata.ocr_needed === true,
    queue,
    // in the order they last ran (a step's first run in an older run does not put it before the others)
    steps: [...latest.values()]
      .sort((a, b) => Number(a.id) - Number(b.id))
      .map((r) => ({
        step: r.step_name,
        type: r.step_type,
        status: r.status,
        attempts: Number(r.attempt),
        durationMs: Number(r.duration_ms),
        startedAt: r.started_at,
        reason: r.reason,
        error: r.error,
        counts: {
          ...(r.items_in === null ? {} : { itemsIn: Number(r.items_in) }),
          ...(r.items_out === null ? {} : { itemsOut: Number(r.items_out) }),
          ...(Number(r.tokens_in) ? { tokensIn: Number(r.tokens_in), tokensOut: Number(r.tokens_out) } : {}),
          ...parseJsonColumn<Record<string, unknown>>(r.counts, {}),
        },
      })),
    chunks: await count('chunks'),
    pages: await count('document_pages'),
    notCurrent: (await supersededReason(db, doc as DocumentRow)) ?? null,
  };
}
