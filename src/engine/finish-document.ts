import type { SqlExecutor } from '../db/sql.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';
import { type CheckpointRow, saveCheckpoints } from './checkpoints.js';
import type { Providers } from './plugin.js';
import { retractDocument } from './retract.js';

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

/**
 * One document's completion inside a transaction: counts onto the row, status done, latest, the versions it
 * replaces no longer latest, its checkpoints, its queue item closed. Returns the ids of the replaced versions, or
 * undefined when the queue item's lease was lost (another worker owns it now; nothing is written).
 */
async function completeInTransaction(
  tx: SqlExecutor,
  documentId: number,
  options: FinishOptions,
): Promise<number[] | undefined> {
  if (options.queue) {
    const now = sqlTime();
    const closed = await tx.run(
      `UPDATE pipeline_queue SET status = 'done', locked_by = NULL, locked_until = NULL, last_error = NULL, finished_at = ?,
         updated_at = ? WHERE id = ? AND locked_by = ?`,
      [now, now, options.queue.itemId, options.queue.worker],
    );
    if (closed.affectedRows === 0) return undefined;
  }
  await saveCheckpoints(tx, options.checkpoints ?? []);
  if (options.completeDocument === false) return [];
  // the row and its counts in one round trip (a statement costs a round trip to MariaDB)
  const [doc] = await tx.query<{ metadata: string | null; source_path: string; version: number }>(
    `SELECT d.metadata, d.source_path, d.version, ${COUNT_COLUMNS} FROM documents d WHERE d.id = ?`,
    [documentId],
  );
  if (!doc) return [];
  const counts = countsOf(doc);
  const metadata = { ...parseJsonColumn<Record<string, unknown>>(doc.metadata, {}), counts };
  const now = sqlTime();
  await tx.run(
    `UPDATE documents SET status = 'done', is_latest = 1, error = NULL, metadata = ?, page_count = COALESCE(page_count, ?),
       processed_at = ?, updated_at = ? WHERE id = ?`,
    [JSON.stringify(metadata), counts.pages || null, now, now, documentId],
  );
  // versions count from 1 (createDocumentVersion): the first version of a file has no older one to replace
  const older =
    Number(doc.version) > 1
      ? await tx.query<{ id: number }>(
          `SELECT id FROM documents WHERE source_path = ? AND id <> ? AND version < ?
             AND (is_latest = 1 OR status IN ('pending', 'processing', 'failed'))`,
          [doc.source_path, documentId, Number(doc.version)],
        )
      : [];
  const ids = older.map((r) => Number(r.id));
  if (ids.length) {
    await tx.run(
      `UPDATE documents SET is_latest = 0, updated_at = ? WHERE id IN (${ids.map(() => '?').join(', ')})`,
      [now, ...ids],
    );
  }
  return ids;
}

/**
 * Completes a document version in one transaction (see completeInTransaction). The replaced versions are
 * retracted only after that, once the new version's data (and points) exist. Returns false when the queue
 * item's lease was lost (another worker owns it now); then nothing is written.
 */
export async function finishDocument(
  db: SqlExecutor,
  providers: Providers,
  documentId: number,
  options: FinishOptions = {},
): Promise<boolean> {
  const [result] = await finishDocuments(db, providers, [{ documentId, options }]);
  if (result instanceof Error) throw result;
  return result ?? false;
}

/**
 * Completes several documents in one transaction (one commit for all). Per document: true, false when the lease
 * was lost, or the error that retracting its replaced versions ended with (after its own completion committed).
 */
export async function finishDocuments(
  db: SqlExecutor,
  providers: Providers,
  jobs: ReadonlyArray<{ documentId: number; options: FinishOptions }>,
): Promise<Array<boolean | Error>> {
  if (jobs.length === 0) return [];
  const superseded = await db.transaction(async (tx) => {
    const out: Array<number[] | undefined> = [];
    for (const job of jobs) out.push(await completeInTransaction(tx, job.documentId, job.options));
    return out;
  });
  const results: Array<boolean | Error> = [];
  for (const ids of superseded) {
    try {
      for (const id of ids ?? []) await retractDocument(db, providers, id);
      results.push(ids !== undefined);
    } catch (error) {
      results.push(error instanceof Error ? error : new Error(String(error)));
    }
  }
  return results;
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
        const results = await finishDocuments(this.db, this.providers, batch);
        batch.forEach((job, i) => {
          const result = results[i] ?? false;
          if (result instanceof Error) job.reject(result);
          else job.resolve(result);
        });
      } catch (error) {
        for (const job of batch) job.reject(error);
      }
    });
    return this.flushing;
  }
}
