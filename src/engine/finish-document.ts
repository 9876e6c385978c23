import type { SqlExecutor } from '../db/sql.js';
import { inList, inLists, marks, rowSlices } from '../db/statement-shapes.js';
import { describeError } from '../errors.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';
import { type CheckpointRow, saveCheckpoints } from './checkpoints.js';
import type { Logger, Providers } from './plugin.js';
import { type FileOutcome, retireFailures } from './queue.js';
import { HAS_DERIVED_ROWS, retractDocument } from './retract.js';

export interface DocumentCounts {
  pages: number;
  sections: number;
  chunks: number;
  embedded_chunks: number;
  entities: number;
  knowledge_items: number;
}

/** The counts of DocumentCounts as subqueries on `documents d` (one placeholder-free select list). */
const COUNT_COLUMNS = `
  (SELECT COUNT(*) FROM document_pages WHERE document_id = d.id) AS pages,
  (SELECT COUNT(*) FROM document_sections WHERE document_id = d.id) AS sections,
  (SELECT COUNT(*) FROM chunks WHERE document_id = d.id) AS chunks,
  (SELECT COALESCE(SUM(CASE WHEN status = 'embedded' THEN 1 ELSE 0 END), 0) FROM chunks WHERE document_id = d.id) AS embedded_chunks,
  (SELECT COUNT(DISTINCT entity_id) FROM entity_mentions WHERE document_id = d.id) AS entities,
  (SELECT COUNT(*) FROM knowledge_items WHERE document_id = d.id) AS knowledge_items`;

const COUNT_KEYS: ReadonlyArray<keyof DocumentCounts> = [
  'pages',
  'sections',
  'chunks',
  'embedded_chunks',
  'entities',
  'knowledge_items',
];

const countsOf = (row: Record<string, unknown>): DocumentCounts =>
  Object.fromEntries(COUNT_KEYS.map((key) => [key, Number(row[key] ?? 0)])) as unknown as DocumentCounts;

/** What a document holds now, counted from SQL in one statement (zeros for a document that does not exist). */
export async function countDocument(db: SqlExecutor, documentId: number): Promise<DocumentCounts> {
  const [row] = await db.query<Record<string, unknown>>(
    `SELECT ${COUNT_COLUMNS} FROM documents d WHERE d.id = ?`,
    [documentId],
  );
  return countsOf(row ?? {});
}

export interface FinishOptions {
  /** close this queue item in the same transaction (only while `worker` holds it) */
  queue?: { itemId: number; worker: string };
  /** checkpoints still to be written */
  checkpoints?: readonly CheckpointRow[];
  /** false when finalize already completed the document: only the queue item and checkpoints are left */
  completeDocument?: boolean;
}

/** A document's row as completion reads it: id, metadata, path, version and the DocumentCounts columns. */
type CompletingRow = Record<string, unknown> & {
  id: number;
  metadata: string | null;
  source_path: string;
  version: number;
  status: string;
  created_at: string;
  /** a newer version of the same file that is latest already (null: none): this one is not made latest */
  newer_latest: number | null;
};

interface CompletionJob {
  documentId: number;
  options: FinishOptions;
}

/** Statements of at most this many documents: well inside every server's limits. */
const BATCH = 200;

/**
 * Closes the queue items of `jobs` that their worker still holds (per worker and slice: a SELECT of the held ones,
 * locked on MariaDB, and one UPDATE; a single item takes the UPDATE alone); returns the closed item ids. A lost
 * lease (another worker owns the item now) leaves the item alone.
 */
async function closeQueueItems(tx: SqlExecutor, jobs: readonly CompletionJob[]): Promise<Set<number>> {
  const closed = new Set<number>();
  const byWorker = new Map<string, number[]>();
  for (const { options } of jobs) {
    if (!options.queue) continue;
    const ids = byWorker.get(options.queue.worker) ?? [];
    ids.push(options.queue.itemId);
    byWorker.set(options.queue.worker, ids);
  }
  const now = sqlTime();
  const close = (ids: readonly number[], worker: string) => {
    const list = inList(ids);
    return tx.run(
      `UPDATE pipeline_queue SET status = 'done', locked_by = NULL, locked_until = NULL, last_error = NULL, finished_at = ?,
         updated_at = ? WHERE id IN (${list.marks}) AND locked_by = ?`,
      [now, now, ...list.values, worker],
    );
  };
  for (const [worker, ids] of byWorker) {
    for (let start = 0; start < ids.length; start += BATCH) {
      const slice = ids.slice(start, start + BATCH);
      // one item: the update says whether it was held
      if (slice.length === 1) {
        if ((await close(slice, worker)).affectedRows > 0) closed.add(slice[0]!);
        continue;
      }
      const list = inList(slice);
      const held = await tx.query<{ id: number }>(
        `SELECT id FROM pipeline_queue WHERE id IN (${list.marks}) AND locked_by = ?${
          tx.dialect === 'mysql' ? ' FOR UPDATE' : ''
        }`,
        [...list.values, worker],
      );
      const heldIds = held.map((r) => Number(r.id));
      if (heldIds.length === 0) continue;
      await close(heldIds, worker);
      for (const id of heldIds) closed.add(id);
    }
  }
  return closed;
}

/** Each document's row (metadata, path, version) and counts, a statement per slice of documents. */
async function documentsWithCounts(
  tx: SqlExecutor,
  ids: readonly number[],
): Promise<Map<number, CompletingRow>> {
  const rows = new Map<number, CompletingRow>();
  for (const list of inLists(ids, BATCH)) {
    // markDone writes the metadata read here back with the counts: on MariaDB the rows are locked (the rows of
    // d only, not those the subqueries read), so that a step's mergeDocumentMetadata waits for this transaction,
    // or this read for its commit, and neither loses the other's keys (SQLite's transaction holds the connection)
    const found = await tx.query<CompletingRow>(
      `SELECT d.id, d.metadata, d.source_path, d.version, d.status, d.created_at, ${COUNT_COLUMNS},
         (SELECT MAX(n.id) FROM documents n WHERE n.source_path = d.source_path AND n.version > d.version
           AND n.is_latest = 1) AS newer_latest
       FROM documents d WHERE d.id IN (${list.marks})${tx.dialect === 'mysql' ? ' FOR UPDATE' : ''}`,
      list.values,
    );
    for (const row of found) rows.set(Number(row.id), row);
  }
  return rows;
}

/**
 * Documents' completions inside one transaction: counts onto each row, status done, latest, the versions it
 * replaces no longer latest, its checkpoints, its queue item closed, the failed items of its file's earlier
 * versions closed (retireFailures). The statements are shared by the documents (queue items, checkpoints, counts,
 * rows and failed items in one statement each for all of them: each costs a round trip to MariaDB); older versions
 * are looked for per document, where there can be any, and a failed item is closed by a statement of its own. Returns per document the ids of
 * the replaced versions, or undefined when its queue item's lease was lost (another worker owns it now; nothing
 * is written for it).
 */
async function completeInTransaction(
  tx: SqlExecutor,
  jobs: readonly CompletionJob[],
): Promise<Array<number[] | undefined>> {
  const closed = await closeQueueItems(tx, jobs);
  const held = jobs.map((job) => !job.options.queue || closed.has(job.options.queue.itemId));
  const live = jobs.filter((_, i) => held[i]);
  const checkpoints = live.flatMap((job) => job.options.checkpoints ?? []);
  await saveCheckpoints(tx, checkpoints);
  const completing = live
    .filter((job) => job.options.completeDocument !== false)
    .map((job) => job.documentId);
  const docs = await documentsWithCounts(tx, [...new Set(completing)]);
  const now = sqlTime();
  // a version whose file was deleted while it was processed stays deleted (and is retracted below), never done
  await markDone(
    tx,
    [...docs.values()].filter((doc) => doc.status !== 'deleted'),
    now,
  );
  const out: Array<number[] | undefined> = [];
  /** the files whose current version is now done: their failures before it are over */
  const current: FileOutcome[] = [];
  for (let i = 0; i < jobs.length; i++) {
    const { documentId, options } = jobs[i]!;
    const doc = docs.get(documentId);
    if (!held[i]) out.push(undefined);
    else if (options.completeDocument === false || !doc) out.push([]);
    else if (doc.status === 'deleted') out.push([documentId]);
    // finished after a newer version of its file (a retry that ran late): it replaces nothing and is retracted
    // itself, as the newer version would have retracted it
    else if (doc.newer_latest !== null) out.push([documentId]);
    else {
      out.push(await replaceOlder(tx, documentId, doc, now));
      current.push({
        path: doc.source_path,
        upToDocumentId: Number(doc.id),
        before: String(doc.created_at),
        reason: `superseded: version ${doc.version} of ${doc.source_path} is done`,
      });
    }
  }
  await retireFailures(tx, current);
  return out;
}

/**
 * The documents' rows: their counts in the metadata, done, latest unless a newer version of the file is latest
 * already (one statement per slice of documents).
 */
async function markDone(tx: SqlExecutor, docs: ReadonlyArray<CompletingRow>, now: string) {
  for (const slice of rowSlices(tx.dialect, docs, BATCH)) {
    const cases = slice.map(() => 'WHEN ? THEN ?').join(' ');
    const counts = slice.map(countsOf);
    const metadata = slice.flatMap((doc, i) => [
      Number(doc.id),
      JSON.stringify({ ...parseJsonColumn<Record<string, unknown>>(doc.metadata, {}), counts: counts[i] }),
    ]);
    const pages = slice.flatMap((doc, i) => [Number(doc.id), counts[i]!.pages || null]);
    const stale = slice.filter((doc) => doc.newer_latest !== null).map((doc) => Number(doc.id));
    await tx.run(
      `UPDATE documents SET status = 'done', is_latest = ${stale.length ? `CASE WHEN id IN (${marks(stale.length)}) THEN 0 ELSE 1 END` : '1'},
         error = NULL, metadata = CASE id ${cases} END,
         page_count = COALESCE(page_count, CASE id ${cases} END), processed_at = ?, updated_at = ?
       WHERE id IN (${marks(slice.length)})`,
      [...stale, ...metadata, ...pages, now, now, ...slice.map((doc) => Number(doc.id))],
    );
  }
}

/**
 * The older versions a completed document replaces are no longer latest; returns the ids of those to retract now.
 * A version still `processing` is not retracted under the worker that runs its steps (they failed on foreign
 * keys of rows taken away): it is no longer latest, and when it finishes it is retracted itself (completion sees
 * the newer latest version), or its queue item finds it superseded.
 */
async function replaceOlder(
  tx: SqlExecutor,
  documentId: number,
  doc: CompletingRow,
  now: string,
): Promise<number[]> {
  // versions count from 1 (createDocumentVersion): the first version of a file has no older one to replace
  if (Number(doc.version) <= 1) return [];
  // with the versions whose retraction failed before (replaced already, but their rows are still there)
  const older = await tx.query<{ id: number; status: string }>(
    `SELECT d.id, d.status FROM documents d WHERE d.source_path = ? AND d.id <> ? AND d.version < ?
       AND (d.is_latest = 1 OR d.status IN ('pending', 'processing', 'failed') OR ${HAS_DERIVED_ROWS})`,
    [doc.source_path, documentId, Number(doc.version)],
  );
  const ids = older.map((r) => Number(r.id));
  if (ids.length) {
    await tx.run(`UPDATE documents SET is_latest = 0, updated_at = ? WHERE id IN (${marks(ids.length)})`, [
      now,
      ...ids,
    ]);
  }
  return older.filter((r) => r.status !== 'processing').map((r) => Number(r.id));
}

/**
 * Retracts what is left of replaced versions: a version a newer done version of its file replaced, whose
 * retraction failed when that one completed (the vector index or a knowledge table was down), keeps its chunks,
 * points and knowledge; nothing would take them away later, as the newer version is done and its file unchanged.
 * Called at the start of a run; one that fails again is left for the next run, with a warning. Returns the ids
 * retracted.
 */
export async function retractLeftovers(
  db: SqlExecutor,
  retract: (documentId: number) => Promise<void>,
  warn: (message: string) => void,
): Promise<number[]> {
  const left = await db.query<{ id: number }>(
    `SELECT d.id FROM documents d WHERE d.is_latest = 0 AND d.status NOT IN ('pending', 'processing')
       AND EXISTS (SELECT 1 FROM documents n WHERE n.source_path = d.source_path AND n.version > d.version
         AND n.status = 'done')
       AND ${HAS_DERIVED_ROWS}`,
  );
  const done: number[] = [];
  for (const { id } of left) {
    try {
      await retract(Number(id));
      done.push(Number(id));
    } catch (error) {
      warn(`document ${id}, a replaced version, is still not retracted: ${(error as Error).message}`);
    }
  }
  return done;
}

/** Where a completion reports that a replaced version is not retracted yet (a run's or a step's logger). */
export type CompletionWarn = Logger['warn'];

/**
 * Completes a document version in one transaction (see completeInTransaction). The replaced versions are
 * retracted only after that, once the new version's data (and points) exist. Returns false when the queue
 * item's lease was lost (another worker owns it now); then nothing is written.
 */
export async function finishDocument(
  db: SqlExecutor,
  providers: Providers,
  documentId: number,
  warn: CompletionWarn,
  options: FinishOptions = {},
): Promise<boolean> {
  const [result] = await finishDocuments(db, providers, [{ documentId, options }], warn);
  return result ?? false;
}

/**
 * Completes several documents in one transaction (one commit for all). Per document: true, or false when the
 * lease was lost. A replaced version whose retraction fails after the commit is a warning, not the document's
 * failure: the new version is done and its queue item closed (nothing would retry it), and the next run's
 * retractLeftovers retracts what is left.
 */
export async function finishDocuments(
  db: SqlExecutor,
  providers: Providers,
  jobs: readonly CompletionJob[],
  warn: CompletionWarn,
): Promise<boolean[]> {
  if (jobs.length === 0) return [];
  const superseded = await db.transaction((tx) => completeInTransaction(tx, jobs));
  for (const [i, ids] of superseded.entries()) {
    for (const id of ids ?? []) {
      try {
        await retractDocument(db, providers, id);
      } catch (error) {
        warn(
          `document ${id}, a replaced version, is not retracted yet (a later run retracts it): ${describeError(error, 500)}`,
          { documentId: jobs[i]!.documentId, replaced: id },
        );
      }
    }
  }
  return superseded.map((ids) => ids !== undefined);
}

/**
 * Group commit for document completions: completions that arrive within 100 ms of each other share one
 * transaction (each commit rewrites the same queue, document and checkpoint pages into the WAL: ~0.4 ms). The
 * document's slot is free while its completion waits, so the wait costs no throughput, and the runner flushes as
 * soon as the queue runs dry; a crash before the commit leaves the items leased, and the next run redoes them
 * (nothing is half-written).
 */
export class CompletionBatcher {
  private pending: Array<{
    documentId: number;
    options: FinishOptions;
    resolve: (closed: boolean) => void;
    reject: (error: unknown) => void;
  }> = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: SqlExecutor,
    private readonly providers: Providers,
    /** where a replaced version whose retraction failed is reported */
    private readonly warn: CompletionWarn,
    private readonly maxBatch = 64,
    private readonly maxDelayMs = 100,
  ) {}

  /** Resolves once the completion is committed: false when the lease was lost. */
  finish(documentId: number, options: FinishOptions): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.pending.push({ documentId, options, resolve, reject });
      if (this.pending.length >= this.maxBatch) void this.flush();
      else this.timer ??= setTimeout(() => void this.flush(), this.maxDelayMs);
    });
  }

  /** Commits whatever is pending now (and waits for a commit in progress). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.flushing.then(async () => {
      if (batch.length === 0) return;
      try {
        const results = await finishDocuments(this.db, this.providers, batch, this.warn);
        for (const [i, job] of batch.entries()) job.resolve(results[i] ?? false);
      } catch (error) {
        for (const job of batch) job.reject(error);
      }
    });
    return this.flushing;
  }
}
