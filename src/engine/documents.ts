import path from 'node:path';
import type { DocumentRow } from '../db/entities.js';
import type { SqlExecutor } from '../db/sql.js';
import { sqlTime } from '../util/time.js';

const MIME: Record<string, string> = {
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  '.md': 'text/markdown',
  '.txt': 'text/plain',
};

export const mimeTypeFor = (file: string) => MIME[path.extname(file).toLowerCase()] ?? 'application/octet-stream';

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
  const [row] = await db.query<DocumentRow>('SELECT * FROM documents WHERE source_path = ? ORDER BY version DESC LIMIT 1', [
    sourcePath,
  ]);
  return row ? numericDocument(row) : undefined;
}

/**
 * Creates the row of a new document version. It becomes `is_latest` only when it is done, so searches keep
 * answering from the previous version until the new one is complete.
 */
export async function createDocumentVersion(
  db: SqlExecutor,
  file: { sourcePath: string; hash: string; size: number },
): Promise<DocumentRow> {
  return db.transaction(async (tx) => {
    const [previous] = await tx.query<DocumentRow>(
      "SELECT * FROM documents WHERE source_path = ? AND status <> 'deleted' ORDER BY version DESC LIMIT 1",
      [file.sourcePath],
    );
    const [top] = await tx.query<{ v: number | null }>('SELECT MAX(version) AS v FROM documents WHERE source_path = ?', [
      file.sourcePath,
    ]);
    const version = Number(top?.v ?? 0) + 1;
    const now = sqlTime();
    const { insertId } = await tx.run(
      `INSERT INTO documents (filename, source_path, file_size, content_hash, mime_type, status, version, previous_version_id,
         is_latest, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'processing', ?, ?, 0, ?, ?)`,
      [
        path.basename(file.sourcePath),
        file.sourcePath,
        file.size,
        file.hash,
        mimeTypeFor(file.sourcePath),
        version,
        previous ? Number(previous.id) : null,
        now,
        now,
      ],
    );
    const [row] = await tx.query<DocumentRow>('SELECT * FROM documents WHERE id = ?', [insertId]);
    return numericDocument(row!);
  });
}

export async function setDocumentStatus(db: SqlExecutor, id: number, status: DocumentRow['status'], error: string | null = null) {
  await db.run('UPDATE documents SET status = ?, error = ?, updated_at = ? WHERE id = ?', [status, error, sqlTime(), id]);
}

/**
 * Marks a document version done and latest; the versions it replaces stop being latest.
 * Returns the ids of the superseded versions, whose derived data the caller retracts.
 */
export async function completeDocument(db: SqlExecutor, documentId: number): Promise<number[]> {
  return db.transaction(async (tx) => {
    const [doc] = await tx.query<DocumentRow>('SELECT * FROM documents WHERE id = ?', [documentId]);
    if (!doc) return [];
    const now = sqlTime();
    await tx.run(
      "UPDATE documents SET status = 'done', is_latest = 1, error = NULL, processed_at = ?, updated_at = ? WHERE id = ?",
      [now, now, documentId],
    );
    const older = await tx.query<{ id: number }>(
      `SELECT id FROM documents WHERE source_path = ? AND id <> ? AND version < ?
         AND (is_latest = 1 OR status IN ('pending', 'processing', 'failed'))`,
      [doc.source_path, documentId, Number(doc.version)],
    );
    const ids = older.map((r) => Number(r.id));
    if (ids.length) {
      await tx.run(`UPDATE documents SET is_latest = 0, updated_at = ? WHERE id IN (${ids.map(() => '?').join(', ')})`, [now, ...ids]);
    }
    return ids;
  });
}

/** A file gone from the source: every version of it is marked deleted. Returns the ids to retract. */
export async function markPathDeleted(db: SqlExecutor, sourcePath: string): Promise<number[]> {
  return db.transaction(async (tx) => {
    const rows = await tx.query<{ id: number }>("SELECT id FROM documents WHERE source_path = ? AND status <> 'deleted'", [sourcePath]);
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
