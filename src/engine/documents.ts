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
  return db.transaction(async (tx) => {
    await recordArchived(tx, file);
    // the newest version number and the newest version not deleted, in one round trip
    const [found] = await tx.query<{ top: number | null; previous: number | null }>(
      `SELECT MAX(version) AS top,
         (SELECT id FROM documents WHERE source_path = ? AND status <> 'deleted' ORDER BY version DESC LIMIT 1) AS previous
       FROM documents WHERE source_path = ?`,
      [file.sourcePath, file.sourcePath],
    );
    const now = sqlTime();
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
      version: Number(found?.top ?? 0) + 1,
      previous_version_id: found?.previous == null ? null : Number(found.previous),
      is_latest: 0,
      metadata: null,
      error: null,
      created_at: now,
      updated_at: now,
      processed_at: null,
    };
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
    await tx.run('UPDATE pipeline_queue SET document_id = ? WHERE id = ? AND locked_by = ?', [
      insertId,
      queue.itemId,
      queue.worker,
    ]);
    return row;
  });
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
