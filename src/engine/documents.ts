import path from 'node:path';
import type { DocumentRow } from '../db/entities.js';
import type { SqlExecutor } from '../db/sql.js';
import { inLists, marks, rowSlices } from '../db/statement-shapes.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';
import { type ArchivedFile, recordArchived } from './archive.js';

const MIME: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  '.md': 'text/markdown',
  '.txt': 'text/plain',
};

export const mimeTypeFor = (file: string) =>
  MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream';

export const numericDocument = (row: DocumentRow): DocumentRow => ({
  ...row,
  id: Number(row.id),
  version: Number(row.version),
  file_size: Number(row.file_size),
  previous_version_id: row.previous_version_id === null ? null : Number(row.previous_version_id),
});

export async function getDocument(db: SqlExecutor, id: number): Promise<DocumentRow | undefined> {
  const [row] = await db.query<DocumentRow>('SELECT * FROM documents WHERE id = ?', [id]);
  return row ? numericDocument(row) : undefined;
}

/** The newest version row of a source path (any status). */
export async function newestVersion(db: SqlExecutor, sourcePath: string): Promise<DocumentRow | undefined> {
  const [row] = await db.query<DocumentRow>(
    'SELECT * FROM documents WHERE source_path = ? ORDER BY version DESC LIMIT 1',
    [sourcePath],
  );
  return row ? numericDocument(row) : undefined;
}

/**
 * Why an existing document version must not be processed (again) now, or undefined when it may: its file was
 * deleted since, or a newer version of it is done (a queue item that comes back late: a retry after its file
 * changed, `cpe retry` of an old failure). A newer version that failed or is still on its way supersedes
 * nothing yet: the version before it stays the one searched (and may be reprocessed), and completion sorts out
 * which is latest when both finish.
 */
export async function supersededReason(db: SqlExecutor, doc: DocumentRow): Promise<string | undefined> {
  const what = `version ${doc.version} of ${doc.source_path} (document ${doc.id})`;
  if (doc.status === 'deleted') return `${what} was deleted (its file left the source)`;
  const [newer] = await db.query<{ id: number; version: number }>(
    `SELECT id, version FROM documents WHERE source_path = ? AND version > ? AND (is_latest = 1 OR status = 'done')
     ORDER BY version DESC LIMIT 1`,
    [doc.source_path, doc.version],
  );
  return newer ? `${what} is superseded by version ${newer.version} (document ${newer.id})` : undefined;
}

/**
 * Creates the row of a new document version and links the queue item to it, in one transaction (with the
 * archive row of its bytes). The version becomes `is_latest` only when it is done, so searches keep answering
 * from the previous version until the new one is complete. Throws ContentAlreadyVersioned when the file's newest
 * version has this content already.
 */
export async function createDocumentVersion(
  db: SqlExecutor,
  file: ArchivedFile & { sourcePath: string },
  queue: { itemId: number; worker: string },
): Promise<DocumentRow> {
  const [row] = await db.transaction((tx) =>
    createDocumentVersions(tx, [{ file, itemId: queue.itemId }], queue.worker),
  );
  if (row instanceof Error) throw row;
  return row!;
}

/** Source paths per statement of createDocumentVersions' version lookup. */
const PATHS_PER_STATEMENT = 200;

/**
 * createDocumentVersion for the items of one claim, inside the caller's transaction: the existing versions of
 * their files are read in one statement, the rows inserted (in one statement where the files differ and the
 * database returns inserted rows, else one per item), and the items linked to their rows in one statement (each
 * statement is a round trip to MariaDB). Per item the new row, or the error its insert ended with (the item is
 * then left to processItem, which reports it), or ContentAlreadyVersioned when the newest version of its file (one
 * made earlier in the batch too) has its content, and no row is made. A failing lookup throws before any row goes
 * in; a failing link takes the inserted rows out again before it throws, so that a caller going on with its
 * transaction keeps no row without its item (processItem would create the same version a second time).
 */
export async function createDocumentVersions(
  tx: SqlExecutor,
  versions: ReadonlyArray<{ file: ArchivedFile & { sourcePath: string }; itemId: number }>,
  worker: string,
): Promise<Array<DocumentRow | Error>> {
  for (const { file } of versions) if (!file.recorded) await recordArchived(tx, file);
  const paths = [...new Set(versions.map((v) => v.file.sourcePath))];
  const newest = await newestVersions(tx, paths);
  const now = sqlTime();
  const files = versions.map((v) => v.file);
  // files that all differ, where the database returns inserted rows: one statement per slice
  const rows =
    tx.insertReturning && paths.length === versions.length && versions.length > 1
      ? await insertAll(tx, files, newest, now)
      : await insertEach(tx, files, newest, now);
  const links = rows.flatMap((row, i) =>
    row instanceof Error ? [] : [[versions[i]!.itemId, row.id] as const],
  );
  try {
    for (const slice of rowSlices(tx.dialect, links, PATHS_PER_STATEMENT)) {
      await tx.run(
        `UPDATE pipeline_queue SET document_id = CASE id ${slice.map(() => 'WHEN ? THEN ?').join(' ')} END
         WHERE id IN (${marks(slice.length)}) AND locked_by = ?`,
        [...slice.flat(), ...slice.map(([itemId]) => itemId), worker],
      );
    }
  } catch (error) {
    // the rows are in and their items not (all) linked: take the rows out again (if that fails too, its error
    // is the one thrown: the transaction is in trouble, and the caller rolls it back when it is retryable)
    await deleteDocumentRows(
      tx,
      links.map(([, documentId]) => documentId),
    );
    throw error;
  }
  return rows;
}

/** Deletes document rows this call created, by id, and the links of queue items to them that went in. */
async function deleteDocumentRows(tx: SqlExecutor, ids: readonly number[]): Promise<void> {
  for (const list of inLists(ids)) {
    await tx.run(
      `UPDATE pipeline_queue SET document_id = NULL WHERE document_id IN (${list.marks})`,
      list.values,
    );
    await tx.run(`DELETE FROM documents WHERE id IN (${list.marks})`, list.values);
  }
}

interface NewestVersion {
  /** the highest version number of the path */
  top: number;
  /** the newest version not deleted: the one a new version follows */
  previous: number | null;
  /** the version numbered `top` when it is not deleted: a file's content it has needs no other version */
  current: ExistingVersion | null;
}

/** A version of a file, as ContentAlreadyVersioned names it. */
export interface ExistingVersion {
  id: number;
  version: number;
  status: string;
  contentHash: string;
}

/**
 * No version is made of an item's content: the file's newest version (done, or on its way) has this content already.
 * Two items can hold one content of a file: a scan that ran while the first was queued, before it had a version,
 * queued the content `new` again, and one after its version was done queues it as an `update`. One content of a
 * file is one version: the second item has nothing to do.
 */
export class ContentAlreadyVersioned extends Error {
  constructor(
    readonly sourcePath: string,
    readonly existing: ExistingVersion,
  ) {
    super(
      `version ${existing.version} of ${sourcePath} (document ${existing.id}, ${existing.status}) has this content already`,
    );
    this.name = 'ContentAlreadyVersioned';
  }
}

/** ContentAlreadyVersioned for `file` when the newest version of its path has its content, else undefined. */
function alreadyVersioned(
  file: ArchivedFile & { sourcePath: string },
  newest: NewestVersion | undefined,
): ContentAlreadyVersioned | undefined {
  const current = newest?.current;
  return current && current.contentHash === file.hash
    ? new ContentAlreadyVersioned(file.sourcePath, current)
    : undefined;
}

/** Per path its NewestVersion, a statement per slice of paths. */
async function newestVersions(
  tx: SqlExecutor,
  paths: readonly string[],
): Promise<Map<string, NewestVersion>> {
  const newest = new Map<string, NewestVersion>();
  for (const list of inLists(paths, PATHS_PER_STATEMENT)) {
    const rows = await tx.query<{
      id: number;
      source_path: string;
      version: number;
      status: string;
      content_hash: string;
    }>(
      `SELECT id, source_path, version, status, content_hash FROM documents WHERE source_path IN (${list.marks})
       ORDER BY version`,
      list.values,
    );
    for (const row of rows) {
      const state = newest.get(row.source_path) ?? { top: 0, previous: null, current: null };
      state.top = Math.max(state.top, Number(row.version));
      if (row.status !== 'deleted') state.previous = Number(row.id);
      state.current =
        row.status === 'deleted'
          ? null
          : {
              id: Number(row.id),
              version: Number(row.version),
              status: row.status,
              contentHash: row.content_hash,
            };
      newest.set(row.source_path, state);
    }
  }
  return newest;
}

const INSERT_COLUMNS =
  'filename, source_path, file_size, content_hash, mime_type, status, version, previous_version_id, is_latest, created_at, updated_at';

/** The row of a new version of `file` after `newest` (id 0 until inserted). */
function versionRow(
  file: ArchivedFile & { sourcePath: string },
  newest: NewestVersion | undefined,
  now: string,
) {
  const row: DocumentRow = {
    id: 0,
    filename: path.basename(file.sourcePath),
    source_path: file.sourcePath,
    file_size: file.size,
    content_hash: file.hash,
    mime_type: mimeTypeFor(file.sourcePath),
    page_count: null,
    title: null,
    language: null,
    status: 'processing',
    version: (newest?.top ?? 0) + 1,
    previous_version_id: newest?.previous ?? null,
    is_latest: 0,
    metadata: null,
    error: null,
    created_at: now,
    updated_at: now,
    processed_at: null,
  };
  const values = [
    row.filename,
    row.source_path,
    row.file_size,
    row.content_hash,
    row.mime_type,
    'processing',
    row.version,
    row.previous_version_id,
    0,
    now,
    now,
  ];
  return { row, values };
}

/** One row per statement; a second version of a file in the batch follows the first. */
async function insertEach(
  tx: SqlExecutor,
  files: ReadonlyArray<ArchivedFile & { sourcePath: string }>,
  newest: Map<string, NewestVersion>,
  now: string,
): Promise<Array<DocumentRow | Error>> {
  const out: Array<DocumentRow | Error> = [];
  for (const file of files) {
    const versioned = alreadyVersioned(file, newest.get(file.sourcePath));
    if (versioned) {
      out.push(versioned);
      continue;
    }
    const { row, values } = versionRow(file, newest.get(file.sourcePath), now);
    try {
      const { insertId } = await tx.run(
        `INSERT INTO documents (${INSERT_COLUMNS}) VALUES (${marks(values.length)})`,
        values,
      );
      row.id = insertId;
    } catch (error) {
      out.push(error instanceof Error ? error : new Error(String(error)));
      continue;
    }
    newest.set(file.sourcePath, {
      top: row.version,
      previous: row.id,
      current: { id: row.id, version: row.version, status: row.status, contentHash: row.content_hash },
    });
    out.push(row);
  }
  return out;
}

/**
 * The rows of files that all differ in one INSERT ... RETURNING per slice (SQLite, MariaDB). A slice whose
 * statement fails inserted nothing (a statement is undone as a whole): its items get the error and are left to
 * processItem, which inserts each row alone and reports its own error; the other slices' rows stand. A file whose
 * newest version has its content gets ContentAlreadyVersioned, and no row.
 */
async function insertAll(
  tx: SqlExecutor,
  files: ReadonlyArray<ArchivedFile & { sourcePath: string }>,
  newest: ReadonlyMap<string, NewestVersion>,
  now: string,
): Promise<Array<DocumentRow | Error>> {
  const out: Array<DocumentRow | Error | undefined> = files.map((file) =>
    alreadyVersioned(file, newest.get(file.sourcePath)),
  );
  const toInsert = files.flatMap((file, index) => (out[index] ? [] : [{ file, index }]));
  for (const sliceFiles of rowSlices(tx.dialect, toInsert, PATHS_PER_STATEMENT)) {
    const slice = sliceFiles.map(({ file, index }) => ({
      index,
      ...versionRow(file, newest.get(file.sourcePath), now),
    }));
    const groups = slice.map(({ values }) => `(${marks(values.length)})`).join(', ');
    let returned: Array<{ id: number; source_path: string }>;
    try {
      returned = await tx.query(
        `INSERT INTO documents (${INSERT_COLUMNS}) VALUES ${groups} RETURNING id, source_path`,
        slice.flatMap(({ values }) => values),
      );
    } catch (error) {
      const failed = error instanceof Error ? error : new Error(String(error));
      for (const { index } of slice) out[index] = failed;
      continue;
    }
    // the order of returned rows is not defined (SQLite): they are matched by path, unique in the batch
    const ids = new Map(returned.map((r) => [r.source_path, Number(r.id)]));
    const unmatched = slice.find(({ row }) => !ids.get(row.source_path));
    if (unmatched) {
      // a path the database stored otherwise than given (cut to the column's size, say): the slice fails as a
      // whole, and its rows go again, so that processItem does not create them a second time
      await deleteDocumentRows(
        tx,
        returned.map((r) => Number(r.id)),
      );
      const failed = new Error(`the insert returned no row for ${unmatched.row.source_path}`);
      for (const { index } of slice) out[index] = failed;
      continue;
    }
    for (const { row, index } of slice) {
      row.id = ids.get(row.source_path)!;
      out[index] = row;
    }
  }
  return out as Array<DocumentRow | Error>;
}

export async function setDocumentStatus(
  db: SqlExecutor,
  id: number,
  status: DocumentRow['status'],
  error: string | null = null,
) {
  // a version marked deleted (its file went away while it was processed) stays deleted
  await db.run(
    "UPDATE documents SET status = ?, error = ?, updated_at = ? WHERE id = ? AND status <> 'deleted'",
    [status, error, sqlTime(), id],
  );
}

/**
 * Merges `patch` into a document's metadata (documents.metadata) and returns what is stored: the keys of `patch`
 * replace the stored ones, the others stay. Steps that run at the same time (metadata_store and a custom step after
 * chunk) each keep their keys: the read and the write are one transaction, and the read locks the row on MariaDB
 * (FOR UPDATE; SQLite's transaction holds the only connection), so a merge waits for the one before it to commit
 * and reads what that wrote. A read outside the transaction and a write after it dropped what another step wrote
 * in between. Joins the caller's transaction when `db` is one.
 */
export async function mergeDocumentMetadata(
  db: SqlExecutor,
  documentId: number,
  patch: Readonly<Record<string, unknown>>,
): Promise<Record<string, unknown>> {
  return db.transaction(async (tx) => {
    const [row] = await tx.query<{ metadata: unknown }>(
      `SELECT metadata FROM documents WHERE id = ?${tx.dialect === 'mysql' ? ' FOR UPDATE' : ''}`,
      [documentId],
    );
    const metadata = { ...parseJsonColumn<Record<string, unknown>>(row?.metadata, {}), ...patch };
    await tx.run('UPDATE documents SET metadata = ?, updated_at = ? WHERE id = ?', [
      JSON.stringify(metadata),
      sqlTime(),
      documentId,
    ]);
    return metadata;
  });
}

/**
 * A file gone from the source: every version of it is marked deleted. Returns the ids to retract. Every version, not
 * only those up to the one the scan knew when it decided the deletion: a version made after that from content queued
 * before it (the file changed, then went) is of the file that went too. Whether the file is there again is for the
 * caller to find out first (the delete item skips a file that is back).
 */
export async function markPathDeleted(db: SqlExecutor, sourcePath: string): Promise<number[]> {
  return db.transaction(async (tx) => {
    const rows = await tx.query<{ id: number }>(
      "SELECT id FROM documents WHERE source_path = ? AND status <> 'deleted'",
      [sourcePath],
    );
    const ids = rows.map((r) => Number(r.id));
    if (ids.length) {
      await tx.run(
        `UPDATE documents SET status = 'deleted', is_latest = 0, updated_at = ? WHERE id IN (${marks(ids.length)})`,
        [sqlTime(), ...ids],
      );
    }
    return ids;
  });
}
