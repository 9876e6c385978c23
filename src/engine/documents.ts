import path from 'node:path';
import type { DocumentRow } from '../db/entities.js';
import type { SqlExecutor } from '../db/sql.js';
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
 * Creates the row of a new document version and links the queue item to it, in one transaction (with the
 * archive row of its bytes). The version becomes `is_latest` only when it is done, so searches keep answering
 * from the previous version until the new one is complete.
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
 * their files are read in one statement, a row is inserted per item, and the items are linked to their rows in
 * one statement (each statement is a round trip to MariaDB). Per item the new row, or the error its insert ended
 * with (the item is then left to processItem, which reports it).
 */
export async function createDocumentVersions(
  tx: SqlExecutor,
  versions: ReadonlyArray<{ file: ArchivedFile & { sourcePath: string }; itemId: number }>,
  worker: string,
): Promise<Array<DocumentRow | Error>> {
  for (const { file } of versions) if (!file.recorded) await recordArchived(tx, file);
  // per path: the newest version number, and the newest version not deleted (the one a new version follows)
  const newest = new Map<string, { top: number; previous: number | null }>();
  const paths = [...new Set(versions.map((v) => v.file.sourcePath))];
  for (let start = 0; start < paths.length; start += PATHS_PER_STATEMENT) {
    const slice = paths.slice(start, start + PATHS_PER_STATEMENT);
    const rows = await tx.query<{ id: number; source_path: string; version: number; status: string }>(
      `SELECT id, source_path, version, status FROM documents WHERE source_path IN (${slice.map(() => '?').join(', ')})
       ORDER BY version`,
      slice,
    );
    for (const row of rows) {
      const state = newest.get(row.source_path) ?? { top: 0, previous: null };
      state.top = Math.max(state.top, Number(row.version));
      if (row.status !== 'deleted') state.previous = Number(row.id);
      newest.set(row.source_path, state);
    }
  }
  const now = sqlTime();
  const out: Array<DocumentRow | Error> = [];
  const links: Array<[number, number]> = [];
  for (const { file, itemId } of versions) {
    const state = newest.get(file.sourcePath) ?? { top: 0, previous: null };
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
      version: state.top + 1,
      previous_version_id: state.previous,
      is_latest: 0,
      metadata: null,
      error: null,
      created_at: now,
      updated_at: now,
      processed_at: null,
    };
    try {
      const { insertId } = await tx.run(
        `INSERT INTO documents (filename, source_path, file_size, content_hash, mime_type, status, version, previous_version_id,
           is_latest, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'processing', ?, ?, 0, ?, ?)`,
        [
          row.filename,
          row.source_path,
          row.file_size,
          row.content_hash,
          row.mime_type,
          row.version,
          row.previous_version_id,
          now,
          now,
        ],
      );
      row.id = insertId;
    } catch (error) {
      out.push(error instanceof Error ? error : new Error(String(error)));
      continue;
    }
    // a second version of the same path in this batch follows this one
    newest.set(file.sourcePath, { top: row.version, previous: row.id });
    links.push([itemId, row.id]);
    out.push(row);
  }
  for (let start = 0; start < links.length; start += PATHS_PER_STATEMENT) {
    const slice = links.slice(start, start + PATHS_PER_STATEMENT);
    await tx.run(
      `UPDATE pipeline_queue SET document_id = CASE id ${slice.map(() => 'WHEN ? THEN ?').join(' ')} END
       WHERE id IN (${slice.map(() => '?').join(', ')}) AND locked_by = ?`,
      [...slice.flat(), ...slice.map(([itemId]) => itemId), worker],
    );
  }
  return out;
}

export async function setDocumentStatus(
  db: SqlExecutor,
  id: number,
  status: DocumentRow['status'],
  error: string | null = null,
) {
  await db.run('UPDATE documents SET status = ?, error = ?, updated_at = ? WHERE id = ?', [
    status,
    error,
    sqlTime(),
    id,
  ]);
}

/** A file gone from the source: every version of it is marked deleted. Returns the ids to retract. */
export async function markPathDeleted(db: SqlExecutor, sourcePath: string): Promise<number[]> {
  return db.transaction(async (tx) => {
    const rows = await tx.query<{ id: number }>(
      "SELECT id FROM documents WHERE source_path = ? AND status <> 'deleted'",
      [sourcePath],
    );
    const ids = rows.map((r) => Number(r.id));
    if (ids.length) {
      await tx.run(
        `UPDATE documents SET status = 'deleted', is_latest = 0, updated_at = ? WHERE id IN (${ids.map(() => '?').join(', ')})`,
        [sqlTime(), ...ids],
      );
    }
    return ids;
  });
}
