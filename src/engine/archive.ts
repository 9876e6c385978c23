import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SqlExecutor } from '../db/sql.js';
import { sqlTime } from '../util/time.js';

const BLOCK = 4 * 1024 * 1024;

export interface ArchivedFile {
  hash: string;
  size: number;
  path: string;
}

/**
 * Where the bytes with this hash live in the archive: <archive>/<aa>/<hash><.ext>. The source's extension is
 * kept so that format checks that look at the name see the same name as the source had.
 */
export const archivePathFor = (archiveDir: string, hash: string, sourcePath: string) =>
  path.join(archiveDir, hash.slice(0, 2), `${hash}${path.extname(sourcePath).toLowerCase()}`);

/**
 * Copies a source file into the content-addressed archive, hashing the bytes as they are copied, so the
 * archive holds exactly the bytes that were hashed (the source may change at any time). Returns the hash of
 * what was copied; the caller compares it with the hash it expected.
 */
export async function archiveFile(db: SqlExecutor, archiveDir: string, source: string): Promise<ArchivedFile> {
  await mkdir(archiveDir, { recursive: true });
  const temp = path.join(archiveDir, `.incoming-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const hash = createHash('sha256');
  let size = 0;
  const input = await open(source, 'r');
  const output = await open(temp, 'w');
  try {
    const buffer = Buffer.allocUnsafe(BLOCK);
    for (;;) {
      const { bytesRead } = await input.read(buffer, 0, BLOCK, null);
      if (bytesRead === 0) break;
      const slice = buffer.subarray(0, bytesRead);
      hash.update(slice);
      await output.write(slice);
      size += bytesRead;
    }
  } finally {
    await input.close();
    await output.close();
  }
  const digest = hash.digest('hex');
  const target = archivePathFor(archiveDir, digest, source);
  const exists = await stat(target).then(
    () => true,
    () => false,
  );
  if (exists) {
    await rm(temp, { force: true });
  } else {
    await mkdir(path.dirname(target), { recursive: true });
    await rename(temp, target);
  }
  const insert =
    db.dialect === 'mysql'
      ? 'INSERT IGNORE INTO document_archive (content_hash, byte_size, storage_path, captured_at) VALUES (?, ?, ?, ?)'
      : 'INSERT OR IGNORE INTO document_archive (content_hash, byte_size, storage_path, captured_at) VALUES (?, ?, ?, ?)';
  await db.run(insert, [digest, size, target, sqlTime()]);
  return { hash: digest, size, path: target };
}
