import { escapeLike, type SqlExecutor } from '../db/sql.js';
import { inLists, marks, rowSlices } from '../db/statement-shapes.js';
import { sha256 } from '../util/hash.js';
import { processAlive } from '../util/process-alive.js';
import { parseSqlTime, sqlTime } from '../util/time.js';

export type QueueAction = 'new' | 'update' | 'delete';
export type QueueStatus = 'pending' | 'processing' | 'done' | 'failed' | 'dead';

export interface QueueItem {
  id: number;
  path: string;
  hash: string;
  action: QueueAction;
  status: QueueStatus;
  attempts: number;
  max_attempts: number;
  next_attempt_at: string | null;
  locked_by: string | null;
  locked_until: string | null;
  last_error: string | null;
  document_id: number | null;
  file_size: number | null;
  /**
   * every step runs again, checkpoints ignored (`cpe reprocess`, `cpe run --force`): whichever process claims the
   * item, not only the one that queued it
   */
  forced: boolean;
  /** the worker whose expired lease this claim took the item over from (its process ended, or hung, holding it) */
  takenFrom?: string;
}

const numeric = (item: QueueItem): QueueItem => ({
  ...item,
  id: Number(item.id),
  attempts: Number(item.attempts),
  max_attempts: Number(item.max_attempts),
  document_id: item.document_id === null ? null : Number(item.document_id),
  file_size: item.file_size === null ? null : Number(item.file_size),
  forced: Number(item.forced) === 1,
});

export interface EnqueueItem {
  path: string;
  hash: string;
  action: QueueAction;
  documentId?: number | null;
  fileSize?: number;
  maxAttempts: number;
  /** every step runs again, whoever processes it (see QueueItem.forced) */
  forced?: boolean;
}

/**
 * Puts a file on the queue. The same (path, hash, action) is one row: enqueueing it again re-opens a
 * finished row instead of adding a duplicate, and leaves a pending or processing row as it is (but for a forced
 * request). A re-opened row takes the document given now: none from a scan (the content is back after another
 * version, A -> B -> A: a new version follows the newest, the old row's document is history), the document itself
 * from a rerun of it. A forced request is not lost: a row that is open or failed keeps its flag and takes a new one
 * (one in flight for its retries: its attempt now runs as it was claimed); only a done row, re-opened, starts from
 * the flag given now.
 */
export async function enqueue(db: SqlExecutor, item: EnqueueItem): Promise<void> {
  await enqueueMany(db, [item]);
}

/** enqueue for many files: multi-row statements of up to 100 rows (call it inside a transaction). */
export async function enqueueMany(db: SqlExecutor, items: readonly EnqueueItem[]): Promise<void> {
  const now = sqlTime();
  for (const slice of rowSlices(db.dialect, items, 100)) {
    const rows = slice.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
    const values = slice.flatMap((item) => [
      item.path,
      sha256(item.path),
      item.hash,
      item.action,
      item.maxAttempts,
      item.documentId ?? null,
      item.fileSize ?? null,
      item.forced ? 1 : 0,
      now,
      now,
    ]);
    const columns =
      'path, path_hash, hash, action, max_attempts, document_id, file_size, forced, created_at, updated_at';
    const open = `status IN ('pending', 'processing')`;
    if (db.dialect === 'mysql') {
      // MySQL evaluates these assignments left to right and later ones see earlier results: status goes last.
      await db.run(
        `INSERT INTO pipeline_queue (${columns})
         VALUES ${rows}
         ON DUPLICATE KEY UPDATE
           forced = IF(status = 'done', VALUES(forced), GREATEST(forced, VALUES(forced))),
           document_id = IF(${open}, document_id, VALUES(document_id)),
           max_attempts = VALUES(max_attempts),
           attempts = IF(${open}, attempts, 0),
           next_attempt_at = IF(${open}, next_attempt_at, NULL),
           last_error = IF(${open}, last_error, NULL),
           finished_at = IF(${open}, finished_at, NULL),
           updated_at = IF(${open}, updated_at, VALUES(updated_at)),
           status = IF(${open}, status, 'pending')`,
        values,
      );
    } else {
      // every assignment sees the row as it was; an open row is written only to take a forced request
      const reopened = (column: string, value: string) =>
        `CASE WHEN ${open} THEN ${column} ELSE ${value} END`;
      await db.run(
        `INSERT INTO pipeline_queue (${columns})
         VALUES ${rows}
         ON CONFLICT (path_hash, hash, action) DO UPDATE SET
           forced = CASE WHEN status = 'done' THEN excluded.forced ELSE MAX(forced, excluded.forced) END,
           document_id = ${reopened('document_id', 'excluded.document_id')},
           max_attempts = ${reopened('max_attempts', 'excluded.max_attempts')},
           updated_at = ${reopened('updated_at', 'excluded.updated_at')},
           status = ${reopened('status', "'pending'")},
           attempts = ${reopened('attempts', '0')},
           next_attempt_at = ${reopened('next_attempt_at', 'NULL')},
           last_error = ${reopened('last_error', 'NULL')},
           finished_at = ${reopened('finished_at', 'NULL')},
           locked_by = ${reopened('locked_by', 'NULL')},
           locked_until = ${reopened('locked_until', 'NULL')}
         WHERE NOT (${open}) OR excluded.forced > forced`,
        values,
      );
    }
  }
}

/** the item with the worker it was taken over from, when the claim took it from an expired lease */
const withHolder = (item: QueueItem, takenFrom: ReadonlyMap<number, string>): QueueItem => {
  const from = takenFrom.get(item.id);
  return from ? { ...item, takenFrom: from } : item;
};

const CLAIMABLE = `(status = 'pending'
  OR (status = 'failed' AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?)
  OR (status = 'processing' AND locked_until < ?))`;

/**
 * Claims up to `limit` items for `worker`, safely across processes: FOR UPDATE SKIP LOCKED on MariaDB/MySQL,
 * the SQLite write lock (BEGIN IMMEDIATE) on SQLite. Expired leases are taken over, but not the worker's own: it is
 * still working on those items (a step that held the event loop past the lease kept its heartbeat from renewing
 * them), and a claim of its own item ran it twice at once, the first attempt's end taking the second for a lost lease
 * (the run ended "ok, 0 done" with the items left `processing`). A claim counts no attempt: startQueueItem counts it
 * when the item's processing starts, so that the items a process claimed ahead and never started are not
 * charged when it is killed (taken over after three kills, they were given up as if they had crashed it). Items taken
 * over say from whom (`takenFrom`).
 */
export async function claimQueueItems(
  db: SqlExecutor,
  worker: string,
  limit: number,
  leaseMs: number,
  onlyPaths?: readonly string[],
): Promise<QueueItem[]> {
  const now = sqlTime();
  const until = sqlTime(Date.now() + leaseMs);
  const pathFilter = onlyPaths?.length ? ` AND path_hash IN (${marks(onlyPaths.length)})` : '';
  const take = Math.max(1, Math.floor(limit));
  const pathParams = (onlyPaths ?? []).map((p) => sha256(p));
  // Three index-friendly arms instead of one OR (which made every claim scan the whole queue): pending items,
  // failed items whose retry time has come, and processing items whose lease expired; oldest first.
  const arms = [
    { where: `status = 'pending'${pathFilter}`, params: pathParams },
    {
      where: `status = 'failed' AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?${pathFilter}`,
      params: [now, ...pathParams],
    },
    {
      where: `status = 'processing' AND locked_until < ? AND (locked_by IS NULL OR locked_by <> ?)${pathFilter}`,
      params: [now, worker, ...pathParams],
    },
  ];
  if (db.dialect === 'sqlite') {
    // atomic under SQLite's write lock (the caller's transaction), and cheap: whose expired leases are taken over
    // (an index lookup that finds nothing in most claims), then one statement for the claim
    const expired = arms[2]!;
    const holders = await db.query<{ id: number; locked_by: string | null }>(
      `SELECT id, locked_by FROM pipeline_queue WHERE ${expired.where} ORDER BY id LIMIT ${take}`,
      expired.params,
    );
    const takenFrom = new Map(holders.flatMap((r) => (r.locked_by ? [[Number(r.id), r.locked_by]] : [])));
    const union = arms
      .map((a) => `SELECT id FROM (SELECT id FROM pipeline_queue WHERE ${a.where} ORDER BY id LIMIT ${take})`)
      .join(' UNION ALL ');
    const rows = await db.query<QueueItem>(
      `UPDATE pipeline_queue SET status = 'processing', locked_by = ?, locked_until = ?, updated_at = ?
       WHERE id IN (SELECT id FROM (${union}) ORDER BY id LIMIT ${take})
       RETURNING *`,
      [worker, until, now, ...arms.flatMap((a) => a.params)],
    );
    return rows.map((row) => withHolder(numeric(row), takenFrom)).sort((a, b) => a.id - b.id);
  }
  return db.transaction(async (tx) => {
    const ids: number[] = [];
    const takenFrom = new Map<number, string>();
    for (const [index, arm] of arms.entries()) {
      if (ids.length >= take) break;
      // the (status, id) index, forced: it yields each arm's rows in id order, so the scan stops at the LIMIT and
      // locks only what it takes. The optimizer picked (status, next_attempt_at) with a filesort when few items
      // were pending among many done ones, which locks every matching row before the LIMIT: a second worker's
      // claim at the same moment found nothing (SKIP LOCKED) and its run ended "0 of 0".
      const rows = await tx.query<{ id: number; locked_by: string | null }>(
        `SELECT id, locked_by FROM pipeline_queue FORCE INDEX (ix_pipeline_queue_status_id) WHERE ${arm.where}
         ORDER BY id LIMIT ${take - ids.length} FOR UPDATE SKIP LOCKED`,
        arm.params,
      );
      ids.push(...rows.map((r) => Number(r.id)));
      // the expired leases' arm: whose they were (that worker's run ended without finishing)
      if (index === 2) for (const r of rows) if (r.locked_by) takenFrom.set(Number(r.id), r.locked_by);
    }
    if (ids.length === 0) return [];
    const list = marks(ids.length);
    await tx.run(
      `UPDATE pipeline_queue SET status = 'processing', locked_by = ?, locked_until = ?, updated_at = ?
       WHERE id IN (${list})`,
      [worker, until, now, ...ids],
    );
    const items = await tx.query<QueueItem>(
      `SELECT * FROM pipeline_queue WHERE id IN (${list}) ORDER BY id`,
      ids,
    );
    return items.map((item) => withHolder(numeric(item), takenFrom));
  });
}

/**
 * Ends the leases that processes of this machine which are gone (killed, crashed) still hold on the queue, so that
 * a command run right after a crash takes those items at once instead of ending "ok, 0 of 0" until the leases
 * expire. Worker ids are `host:pid:run`; a lease of another host, or of a process that still runs (or of a pid
 * taken again by a new process), is left to expire. Only for a queue in an SQLite file, which only processes of
 * this machine open: on a server two containers can share a host name but not their process ids. Returns the
 * workers whose leases were ended, their process ids and how many items each held.
 */
export async function releaseLeasesOfGoneProcesses(
  db: SqlExecutor,
  host: string,
): Promise<Array<{ worker: string; pid: number; items: number }>> {
  if (db.dialect !== 'sqlite') return [];
  const now = sqlTime();
  const held = await db.query<{ locked_by: string; n: number }>(
    `SELECT locked_by, COUNT(*) AS n FROM pipeline_queue
     WHERE status = 'processing' AND locked_until >= ? AND locked_by LIKE ? ESCAPE '!' GROUP BY locked_by`,
    [now, `${escapeLike(host)}:%`],
  );
  const released: Array<{ worker: string; pid: number; items: number }> = [];
  for (const { locked_by: worker, n } of held) {
    const pid = Number(worker.slice(host.length + 1).split(':')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || processAlive(pid)) continue;
    // expired from now on: the next claim takes the items over (an attempt counted for those the process had started)
    await db.run(
      `UPDATE pipeline_queue SET locked_until = ? WHERE status = 'processing' AND locked_by = ? AND locked_until >= ?`,
      [sqlTime(Date.now() - 1000), worker, now],
    );
    released.push({ worker, pid, items: Number(n) });
  }
  return released;
}

/**
 * Counts the attempt of a claimed item whose processing starts now, before any of its steps runs: an item whose
 * processing ends the process every time (a native parser crash, the memory limit) is given up after max_attempts
 * starts instead of crash-looping every worker in turn. One small statement, not part of the claim: an item claimed
 * ahead counts only if it starts. False when the worker no longer holds the item (another process took it over).
 */
export async function startQueueItem(db: SqlExecutor, itemId: number, worker: string): Promise<boolean> {
  const { affectedRows } = await db.run(
    `UPDATE pipeline_queue SET attempts = attempts + 1 WHERE id = ? AND locked_by = ? AND status = 'processing'`,
    [itemId, worker],
  );
  return affectedRows > 0;
}

/**
 * Whether an item is processed alone (no other item of its process beside it): taken over from a process that ended
 * (or hung) after its processing had started, it may be what ended that process. Alone, a crash it causes again
 * charges an attempt to it only, not to the documents that happened to run beside it.
 */
export const runsAlone = (item: Pick<QueueItem, 'takenFrom' | 'attempts'>): boolean =>
  item.takenFrom !== undefined && item.attempts > 0;

/** Extends the leases of the given items; returns the ids whose lease this worker no longer holds. */
export async function heartbeat(
  db: SqlExecutor,
  worker: string,
  ids: readonly number[],
  leaseMs: number,
): Promise<number[]> {
  if (ids.length === 0) return [];
  const list = marks(ids.length);
  await db.run(
    `UPDATE pipeline_queue SET locked_until = ? WHERE id IN (${list}) AND locked_by = ? AND status = 'processing'`,
    [sqlTime(Date.now() + leaseMs), ...ids, worker],
  );
  const held = await db.query<{ id: number }>(
    `SELECT id FROM pipeline_queue WHERE id IN (${list}) AND locked_by = ? AND status = 'processing'`,
    [...ids, worker],
  );
  const heldIds = new Set(held.map((r) => Number(r.id)));
  return ids.filter((id) => !heldIds.has(id));
}

/** Links the claimed item to its document row (so a retry reuses it). Only while this worker holds it. */
export async function attachDocument(
  db: SqlExecutor,
  itemId: number,
  worker: string,
  documentId: number,
): Promise<void> {
  await db.run('UPDATE pipeline_queue SET document_id = ? WHERE id = ? AND locked_by = ?', [
    documentId,
    itemId,
    worker,
  ]);
}

/** Closes an item as done. Returns false when the lease was lost (another worker owns it now). */
export async function completeQueueItem(
  db: SqlExecutor,
  itemId: number,
  worker: string,
  note: string | null = null,
): Promise<boolean> {
  const now = sqlTime();
  const result = await db.run(
    `UPDATE pipeline_queue SET status = 'done', locked_by = NULL, locked_until = NULL, last_error = ?, finished_at = ?, updated_at = ?
     WHERE id = ? AND locked_by = ?`,
    [note, now, now, itemId, worker],
  );
  return result.affectedRows > 0;
}

/** Capped exponential backoff: 5 s, 10 s, 20 s, ... up to 10 minutes. */
export const backoffMs = (attempt: number, baseMs = 5000, capMs = 600_000) =>
  Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));

/**
 * Records a failure. A retryable error within max_attempts becomes `failed` with a next attempt time;
 * a permanent error becomes `failed` without one (until `cpe retry`); used-up attempts become `dead`.
 */
export async function failQueueItem(
  db: SqlExecutor,
  item: Pick<QueueItem, 'id' | 'attempts' | 'max_attempts'>,
  worker: string,
  error: string,
  retryable: boolean,
): Promise<QueueStatus> {
  const dead = item.attempts >= item.max_attempts;
  const status: QueueStatus = dead ? 'dead' : 'failed';
  const next = !dead && retryable ? sqlTime(Date.now() + backoffMs(item.attempts)) : null;
  const now = sqlTime();
  await db.run(
    `UPDATE pipeline_queue SET status = ?, next_attempt_at = ?, last_error = ?, locked_by = NULL, locked_until = NULL,
       finished_at = ?, updated_at = ? WHERE id = ? AND locked_by = ?`,
    [status, next, error, now, now, item.id, worker],
  );
  return status;
}

/**
 * Puts a started item back to be claimed again in `ms` (the attempt its start counted given back), saying what it
 * waits for: a delete item while a version of its file is being processed, say.
 */
export async function deferQueueItem(
  db: SqlExecutor,
  itemId: number,
  worker: string,
  ms: number,
  reason: string,
): Promise<void> {
  const now = sqlTime();
  await db.run(
    `UPDATE pipeline_queue SET status = 'failed', next_attempt_at = ?, last_error = ?, locked_by = NULL,
       locked_until = NULL, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, updated_at = ?
     WHERE id = ? AND locked_by = ? AND status = 'processing'`,
    [sqlTime(Date.now() + ms), reason, now, itemId, worker],
  );
}

/**
 * Ends the wait of a deferred item (deferQueueItem) at once: pending again, its reason kept until it is done. A run
 * does so as it ends, so that it takes the items whose wait is over itself and leaves the others waiting, not failed.
 * False when the item is no longer waiting (another worker took it).
 */
export async function undeferQueueItem(db: SqlExecutor, itemId: number): Promise<boolean> {
  const { affectedRows } = await db.run(
    `UPDATE pipeline_queue SET status = 'pending', next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'failed' AND locked_by IS NULL`,
    [sqlTime(), itemId],
  );
  return affectedRows > 0;
}

/** The queue item of this file, content and action (one row each, see enqueue), or undefined. */
export async function findQueueItem(
  db: SqlExecutor,
  path: string,
  hash: string,
  action: QueueAction,
): Promise<QueueItem | undefined> {
  const [row] = await db.query<QueueItem>(
    'SELECT * FROM pipeline_queue WHERE path_hash = ? AND hash = ? AND action = ?',
    [sha256(path), hash, action],
  );
  return row && numeric(row);
}

/** Whether an item is claimed and its lease still runs: a process works on it now. */
export const inFlight = (item: Pick<QueueItem, 'status' | 'locked_until'>): boolean =>
  item.status === 'processing' &&
  item.locked_until !== null &&
  parseSqlTime(item.locked_until)!.getTime() > Date.now();

/** Whether another queue item of this file is being processed now (claimed, its lease running). */
export async function fileInFlight(db: SqlExecutor, path: string, exceptItemId: number): Promise<boolean> {
  const rows = await db.query<{ id: number }>(
    `SELECT id FROM pipeline_queue WHERE path_hash = ? AND id <> ? AND action <> 'delete' AND status = 'processing'
       AND locked_until > ? LIMIT 1`,
    [sha256(path), exceptItemId, sqlTime()],
  );
  return rows.length > 0;
}

/**
 * Closes the items that would still make a version of a file found gone (a delete item's work): pending ones, and
 * ones whose process ended holding them (lease run out). Their content went with the file; made from the bytes the
 * scan archived, such a version would be the current document of a file that is not there. An item being processed
 * now is not touched (the deletion waits for it: fileInFlight); failed ones are retireFailures'. Returns how many.
 */
export async function closeItemsOfGoneFile(db: SqlExecutor, path: string, reason: string): Promise<number> {
  const now = sqlTime();
  const { affectedRows } = await db.run(
    `UPDATE pipeline_queue SET status = 'done', last_error = ?, locked_by = NULL, locked_until = NULL,
       next_attempt_at = NULL, finished_at = ?, updated_at = ?
     WHERE path_hash = ? AND action <> 'delete' AND (status = 'pending' OR (status = 'processing' AND locked_until < ?))`,
    [reason, now, now, sha256(path), now],
  );
  return affectedRows;
}

/**
 * Gives an item back untouched (Ctrl-C, drain): the attempt its start counted (when it had started: see
 * startQueueItem) does not count. False when the worker no longer held it (another process took it over).
 */
export async function releaseQueueItem(
  db: SqlExecutor,
  itemId: number,
  worker: string,
  started: boolean,
): Promise<boolean> {
  const now = sqlTime();
  const givenBack = started ? 'attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END, ' : '';
  const { affectedRows } = await db.run(
    `UPDATE pipeline_queue SET status = 'pending', locked_by = NULL, locked_until = NULL, ${givenBack}updated_at = ?
     WHERE id = ? AND locked_by = ? AND status = 'processing'`,
    [now, itemId, worker],
  );
  // its document (made with the claim, or being processed) waits with it: pending, not "processing" with nothing
  // running
  if (affectedRows > 0)
    await db.run(
      `UPDATE documents SET status = 'pending', updated_at = ?
       WHERE status = 'processing' AND id = (SELECT document_id FROM pipeline_queue WHERE id = ?)`,
      [now, itemId],
    );
  return affectedRows > 0;
}

/**
 * Closes a failed (or dead) item that is history now: done, with the reason in last_error. False when it is no
 * longer failed (a retry took it meanwhile).
 */
async function closeFailedItem(db: SqlExecutor, id: number, reason: string): Promise<boolean> {
  const now = sqlTime();
  const { affectedRows } = await db.run(
    `UPDATE pipeline_queue SET status = 'done', next_attempt_at = NULL, last_error = ?, finished_at = ?, updated_at = ?
     WHERE id = ? AND status IN ('failed', 'dead')`,
    [reason, now, now, id],
  );
  return affectedRows > 0;
}

/** What makes a file's failures history: a newer version of it done, or its deletion. */
export interface FileOutcome {
  path: string;
  /** the failures of versions up to this document (ids grow with versions) are over; null: of every version */
  upToDocumentId: number | null;
  /** and those that made no version, when they failed before this time (sqlTime): before the outcome's content */
  before: string;
  /** why, for last_error ("superseded: version 2 of /x/a.md is done") */
  reason: string;
}

/**
 * Closes the failed and dead items that an outcome of their file made history, so that the queue (and `cpe status`)
 * holds one current state per file: a failure stays until the file changes again (and the new version is done) or
 * goes. They become `done`, last_error the reason and what they had failed with. Delete items are left alone (a
 * deletion waiting for a version in flight is still to be done), as is a failure of a newer version than the one
 * done. Returns how many were closed.
 */
export async function retireFailures(db: SqlExecutor, outcomes: readonly FileOutcome[]): Promise<number> {
  const byHash = new Map<string, FileOutcome>();
  for (const outcome of outcomes) {
    const key = sha256(outcome.path);
    const other = byHash.get(key);
    // two versions of one file done together: the newer one's outcome covers the older one's
    if (!other || (outcome.upToDocumentId ?? Infinity) > (other.upToDocumentId ?? Infinity))
      byHash.set(key, outcome);
  }
  let retired = 0;
  for (const list of inLists([...byHash.keys()], 200)) {
    const rows = await db.query<{
      id: number;
      path_hash: string;
      document_id: number | null;
      finished_at: string | null;
      last_error: string | null;
    }>(
      `SELECT id, path_hash, document_id, finished_at, last_error FROM pipeline_queue
       WHERE path_hash IN (${list.marks}) AND status IN ('failed', 'dead') AND action <> 'delete'`,
      list.values,
    );
    for (const row of rows) {
      const outcome = byHash.get(row.path_hash)!;
      const over =
        row.document_id !== null
          ? outcome.upToDocumentId === null || Number(row.document_id) <= outcome.upToDocumentId
          : row.finished_at !== null &&
            parseSqlTime(row.finished_at)!.getTime() < parseSqlTime(outcome.before)!.getTime();
      if (!over) continue;
      const said = row.last_error ? `; it had failed: ${row.last_error}` : '';
      if (await closeFailedItem(db, Number(row.id), `${outcome.reason}${said}`)) retired++;
    }
  }
  return retired;
}

/**
 * The hash of a queue item for a file the scan found but could not read (its SHA-256 is not known): one such item
 * per file and action, beside its items of content that was read. No file's SHA-256 is all zeros.
 */
export const UNREADABLE_HASH = '0'.repeat(64);

/** A file the scan could not read (see UNREADABLE_HASH). */
export interface UnreadableItem {
  path: string;
  reason: string;
  /** its document, when it has one (then the item is an `update`) */
  documentId: number | null;
}

/**
 * Records files the scan could not read as failed queue items with their reason and no next attempt: `cpe status`
 * lists them and the run counts them, until the file can be read again or goes (closeUnreadableItems). A file still
 * unreadable keeps its one item, the reason brought up to date; an item being retried (`cpe retry`) is left alone.
 */
export async function recordUnreadableItems(
  db: SqlExecutor,
  files: readonly UnreadableItem[],
  maxAttempts: number,
): Promise<void> {
  const now = sqlTime();
  for (const slice of rowSlices(db.dialect, files, 100)) {
    const rows = slice.map(() => "(?, ?, ?, ?, 'failed', ?, ?, ?, ?, ?)").join(', ');
    const values = slice.flatMap((file) => [
      file.path,
      sha256(file.path),
      UNREADABLE_HASH,
      file.documentId === null ? 'new' : 'update',
      maxAttempts,
      file.reason,
      now,
      now,
      now,
    ]);
    const columns =
      'path, path_hash, hash, action, status, max_attempts, last_error, finished_at, created_at, updated_at';
    if (db.dialect === 'mysql') {
      const open = `status IN ('pending', 'processing')`;
      await db.run(
        `INSERT INTO pipeline_queue (${columns}) VALUES ${rows}
         ON DUPLICATE KEY UPDATE
           last_error = IF(${open}, last_error, VALUES(last_error)),
           next_attempt_at = IF(${open}, next_attempt_at, NULL),
           finished_at = IF(${open}, finished_at, VALUES(finished_at)),
           updated_at = IF(${open}, updated_at, VALUES(updated_at)),
           status = IF(${open}, status, 'failed')`,
        values,
      );
    } else {
      await db.run(
        `INSERT INTO pipeline_queue (${columns}) VALUES ${rows}
         ON CONFLICT (path_hash, hash, action) DO UPDATE SET
           status = 'failed', last_error = excluded.last_error, next_attempt_at = NULL,
           finished_at = excluded.finished_at, updated_at = excluded.updated_at
         WHERE status NOT IN ('pending', 'processing')`,
        values,
      );
    }
  }
}

/**
 * Closes the failed (and dead) items of unreadable files for which `over` gives a reason (the file can be read again,
 * or is gone): done, with that reason. Returns how many.
 */
export async function closeUnreadableItems(
  db: SqlExecutor,
  over: (path: string) => string | undefined,
): Promise<number> {
  const rows = await db.query<{ id: number; path: string }>(
    `SELECT id, path FROM pipeline_queue WHERE status IN ('failed', 'dead') AND hash = ?`,
    [UNREADABLE_HASH],
  );
  let closed = 0;
  for (const row of rows) {
    const reason = over(row.path);
    if (reason === undefined) continue;
    if (await closeFailedItem(db, Number(row.id), reason)) closed++;
  }
  return closed;
}

/**
 * `cpe retry`: failed and dead items become pending with fresh attempts. Returns how many. A forced item stays
 * forced: its failed attempt may have run only some of its steps again, and the others' checkpoints are the old ones.
 * With `only`, just those items, forced when asked (`cpe run --force` tries a failed version again so: see
 * Engine.requeueStale).
 */
export async function retryFailedItems(
  db: SqlExecutor,
  only?: { ids: readonly number[]; forced: boolean },
): Promise<number> {
  const forced = only?.forced ? ', forced = 1' : '';
  const retry = `UPDATE pipeline_queue SET status = 'pending', attempts = 0, next_attempt_at = NULL${forced}, updated_at = ?
     WHERE status IN ('failed', 'dead')`;
  if (!only) return (await db.run(retry, [sqlTime()])).affectedRows;
  let retried = 0;
  for (const list of inLists(only.ids))
    retried += (await db.run(`${retry} AND id IN (${list.marks})`, [sqlTime(), ...list.values])).affectedRows;
  return retried;
}

/**
 * How many files have a queue item that nothing brings back by itself and none open: `dead` (its attempts ran out)
 * and `failed` for good (a failure no attempt would mend: a corrupt file, a step's config, so no next attempt).
 * Only a change of the file (a new item) or `cpe retry` processes them again. `under` is a condition on the column
 * `path` (scan's pathsUnder).
 */
export async function countGivenUpFiles(
  db: SqlExecutor,
  under: { sql: string; params: string[] },
): Promise<{ dead: number; failed: number }> {
  // a failure is not given up while an open item of its file tries its version again, deletes the file or brings
  // newer content (whose version, done, ends the failure: retireFailures); an older version queued again (a pipeline
  // edited) mends nothing of it
  const rows = await db.query<{ status: string; n: number }>(
    `SELECT d.status, COUNT(DISTINCT d.path_hash) AS n FROM pipeline_queue d
     WHERE (d.status = 'dead' OR (d.status = 'failed' AND d.next_attempt_at IS NULL)) AND ${under.sql}
       AND NOT EXISTS (SELECT 1 FROM pipeline_queue o WHERE o.path_hash = d.path_hash
         AND (o.status IN ('pending', 'processing') OR (o.status = 'failed' AND o.next_attempt_at IS NOT NULL))
         AND (o.action = 'delete' OR o.document_id = d.document_id
              OR (o.hash <> d.hash AND (o.document_id IS NULL OR o.document_id > d.document_id))))
     GROUP BY d.status`,
    under.params,
  );
  const count = (status: string) => Number(rows.find((r) => r.status === status)?.n ?? 0);
  return { dead: count('dead'), failed: count('failed') };
}

export async function countClaimable(db: SqlExecutor): Promise<number> {
  const now = sqlTime();
  const [row] = await db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM pipeline_queue WHERE ${CLAIMABLE}`, [
    now,
    now,
  ]);
  return Number(row?.n ?? 0);
}
