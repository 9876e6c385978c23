import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { type FileHandle, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { SqlExecutor } from '../db/sql.js';
import { sha256 } from '../util/hash.js';
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

const statOrUndefined = (file: string) => statSync(file, { throwIfNoEntry: false });

const madeDirs = new Set<string>();
async function ensureDir(dir: string) {
  if (madeDirs.has(dir)) return;
  await mkdir(dir, { recursive: true });
  madeDirs.add(dir);
}

const tempName = (archiveDir: string) =>
  path.join(archiveDir, `.incoming-${process.pid}-${Math.random().toString(36).slice(2)}`);

/**
 * Copies a source file into the content-addressed archive, hashing the bytes as they are copied, so the
 * archive holds exactly the bytes that were hashed (the source may change at any time). Returns the hash of
 * what was copied; the caller compares it with the hash it expected and records the archive row. The file
 * lands under its final name by an atomic rename, so a crash never leaves a half-written archive file.
 */
export async function storeInArchive(archiveDir: string, source: string): Promise<ArchivedFile> {
  const input = await open(source, 'r');
  try {
    if ((await input.stat()).size <= BLOCK) {
      // small files (almost all documents): one read, one write
      const bytes = await input.readFile();
      return await writeArchiveBytes(archiveDir, sha256(bytes), source, bytes);
    }
    return await streamIntoArchive(archiveDir, source, input);
  } finally {
    await input.close();
  }
}

/** A large file copied block by block, hashed on the way, then renamed to its hash. */
async function streamIntoArchive(
  archiveDir: string,
  source: string,
  input: FileHandle,
): Promise<ArchivedFile> {
  await ensureDir(archiveDir);
  const temp = tempName(archiveDir);
  const hash = createHash('sha256');
  let size = 0;
  try {
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
      await output.close();
    }
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  const digest = hash.digest('hex');
  const target = archivePathFor(archiveDir, digest, source);
  await ensureDir(path.dirname(target));
  await rename(temp, target); // same content under the same name: replacing an existing copy changes nothing
  return { hash: digest, size, path: target };
}

/**
 * Archives bytes already in memory (the scan read them to hash them): written under a temporary name and renamed,
 * skipped when the archive holds this hash already (same name, same bytes). Synchronous on purpose: these are
 * small files (the scan reads only files under a few megabytes whole), and creating one costs 20-50 µs of this
 * thread's time, against ~250 µs of main-thread time plus the thread pool's for fs.promises' open, write, close
 * and rename round trips (measured for 8 KB files on this project's 2-core machine, 5-10x the CPU in all).
 */
export async function writeArchiveBytes(
  archiveDir: string,
  hash: string,
  sourcePath: string,
  bytes: Uint8Array,
): Promise<ArchivedFile> {
  const target = archivePathFor(archiveDir, hash, sourcePath);
  if (statOrUndefined(target)?.size !== bytes.length) {
    const dir = path.dirname(target);
    if (!madeDirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      madeDirs.add(dir);
    }
    const temp = tempName(archiveDir);
    try {
      writeFileSync(temp, bytes);
      renameSync(temp, target);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }
  return { hash, size: bytes.length, path: target };
}

/**
 * The archived copy of a queued file when it is already there (the scan archived it, or an earlier version had
 * the same bytes); undefined when it must be copied from the source.
 */
export async function findArchived(
  archiveDir: string,
  hash: string,
  sourcePath: string,
  size: number | null,
): Promise<ArchivedFile | undefined> {
  const target = archivePathFor(archiveDir, hash, sourcePath);
  const info = statOrUndefined(target);
  if (!info?.isFile() || (size !== null && info.size !== size)) return undefined;
  return { hash, size: info.size, path: target };
}

/** The archive row of a stored file (idempotent). */
export async function recordArchived(db: SqlExecutor, file: ArchivedFile): Promise<void> {
  const insert =
    db.dialect === 'mysql'
      ? 'INSERT IGNORE INTO document_archive (content_hash, byte_size, storage_path, captured_at) VALUES (?, ?, ?, ?)'
      : 'INSERT OR IGNORE INTO document_archive (content_hash, byte_size, storage_path, captured_at) VALUES (?, ?, ?, ?)';
  await db.run(insert, [file.hash, file.size, file.path, sqlTime()]);
}

/** Reads archived bytes back (for reprocessing). */
export const readArchived = (file: string) => readFile(file);
