import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { SqlExecutor } from '../db/sql.js';
import { inLists } from '../db/statement-shapes.js';
import { sha256 } from '../util/hash.js';
import { sqlTime } from '../util/time.js';

const BLOCK = 4 * 1024 * 1024;

/**
 * Files of at most this size are archived in SQL (`document_archive.content`) rather than as a file of their own:
 * on this project's machines creating a file costs 0.3-1 ms of system time (its inode, its folder), against tens
 * of microseconds for a row, and most documents are small. Such a document's file copy is written only when a
 * step asks for a file path (`DocumentRef.archivePath`); the built-in text extraction reads the bytes instead.
 */
export const INLINE_ARCHIVE_BYTES = 1024 * 1024;

/** Inline rows the scan collects before it writes them (one transaction): bounds its memory. */
const INLINE_FLUSH_BYTES = 4 * 1024 * 1024;
const INLINE_FLUSH_ROWS = 200;
/**
 * Bytes per INSERT of inline rows (a row of up to INLINE_ARCHIVE_BYTES alone is larger): well under a MariaDB
 * server's max_allowed_packet (16 MB by default, 4 MB on older servers).
 */
const INLINE_STATEMENT_BYTES = 2 * 1024 * 1024;

export interface ArchivedFile {
  hash: string;
  size: number;
  /** the archive file (for bytes held in SQL: where a step that asks for a file gets its copy) */
  path: string;
  /** its document_archive row is known to exist (read or written just now): recordArchived has nothing to add */
  recorded?: boolean;
  /** the bytes held in SQL, when they were read with the row (findArchivedMany's bytesUpTo) */
  bytes?: Buffer;
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
 * lands under its final name by an atomic rename, so a crash never leaves a half-written archive file. A file of
 * up to INLINE_ARCHIVE_BYTES is archived in SQL instead, and its bytes come back with it (`bytes`).
 */
export async function storeInArchive(
  db: SqlExecutor,
  archiveDir: string,
  source: string,
): Promise<ArchivedFile> {
  const input = await open(source, 'r');
  try {
    if ((await input.stat()).size <= BLOCK) {
      // small files (almost all documents): one read, one write
      const bytes = await input.readFile();
      const hash = sha256(bytes);
      if (bytes.length > INLINE_ARCHIVE_BYTES) return writeArchiveFile(archiveDir, hash, source, bytes);
      const file = { hash, size: bytes.length, path: archivePathFor(archiveDir, hash, source) };
      await putInlineRows(db, [{ file, bytes }]);
      return { ...file, recorded: true, bytes };
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
 * Archives bytes already in memory as a file: written under a temporary name and renamed, skipped when the archive
 * holds this hash already (same name, same bytes). Synchronous on purpose: the bytes are at most a few megabytes
 * (the scan reads only such files whole), and fs.promises' open, write, close and rename round trips cost more in
 * all (~250 µs of main-thread time plus the thread pool's for an 8 KB file, 5-10x the CPU, measured on this
 * project's 2-core machine). Creating the file is the cost either way (see INLINE_ARCHIVE_BYTES).
 */
export function writeArchiveFile(
  archiveDir: string,
  hash: string,
  sourcePath: string,
  bytes: Uint8Array,
): ArchivedFile {
  const target = archivePathFor(archiveDir, hash, sourcePath);
  writeFileAt(target, bytes);
  return { hash, size: bytes.length, path: target };
}

/** Writes `bytes` to `target` by a temporary name and a rename, unless a file of that size is there already. */
function writeFileAt(target: string, bytes: Uint8Array): void {
  if (statOrUndefined(target)?.size !== bytes.length) {
    const dir = path.dirname(target);
    if (!madeDirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      madeDirs.add(dir);
    }
    // the temporary name in the archive folder itself (the parent of the hash prefix folders): same file system
    const temp = tempName(path.dirname(dir));
    try {
      writeFileSync(temp, bytes);
      renameSync(temp, target);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
  }
}

/**
 * The archived copy of a queued file when it is already there, in SQL or as a file (the scan archived it, or an
 * earlier version had the same bytes); undefined when it must be copied from the source.
 */
export async function findArchived(
  db: SqlExecutor,
  archiveDir: string,
  hash: string,
  sourcePath: string,
  size: number | null,
  options: { bytesUpTo?: number } = {},
): Promise<ArchivedFile | undefined> {
  const [found] = await findArchivedMany(db, archiveDir, [{ hash, sourcePath, size }], options);
  return found;
}

/**
 * findArchived for many files: one statement per slice of hashes. With `bytesUpTo`, the bytes of files held in SQL
 * up to that size come with their rows (`bytes`).
 */
export async function findArchivedMany(
  db: SqlExecutor,
  archiveDir: string,
  files: ReadonlyArray<{ hash: string; sourcePath: string; size: number | null }>,
  options: { bytesUpTo?: number } = {},
): Promise<Array<ArchivedFile | undefined>> {
  const rows = new Map<string, { byte_size: number; inline: number; bytes: Buffer | null }>();
  const hashes = [...new Set(files.map((f) => f.hash))];
  for (const list of inLists(hashes)) {
    const sliceRows = await db.query<{
      content_hash: string;
      byte_size: number;
      inline: number;
      bytes: Buffer | null;
    }>(
      `SELECT content_hash, byte_size, CASE WHEN content IS NULL THEN 0 ELSE 1 END AS inline,
         CASE WHEN byte_size <= ? THEN content END AS bytes
       FROM document_archive WHERE content_hash IN (${list.marks})`,
      [options.bytesUpTo ?? -1, ...list.values],
    );
    for (const row of sliceRows) rows.set(row.content_hash, row);
  }
  return files.map(({ hash, sourcePath, size }) => {
    const target = archivePathFor(archiveDir, hash, sourcePath);
    const row = rows.get(hash);
    if (row && Number(row.inline) === 1 && (size === null || Number(row.byte_size) === size)) {
      const found: ArchivedFile = { hash, size: Number(row.byte_size), path: target, recorded: true };
      if (row.bytes !== null && row.bytes !== undefined) found.bytes = row.bytes;
      return found;
    }
    const info = statOrUndefined(target);
    if (!info?.isFile() || (size !== null && info.size !== size)) return undefined;
    return { hash, size: info.size, path: target, recorded: row !== undefined };
  });
}

/** The archive row of a stored file (idempotent). */
export async function recordArchived(db: SqlExecutor, file: ArchivedFile): Promise<void> {
  const insert =
    db.dialect === 'mysql'
      ? 'INSERT IGNORE INTO document_archive (content_hash, byte_size, storage_path, captured_at) VALUES (?, ?, ?, ?)'
      : 'INSERT OR IGNORE INTO document_archive (content_hash, byte_size, storage_path, captured_at) VALUES (?, ?, ?, ?)';
  await db.run(insert, [file.hash, file.size, file.path, sqlTime()]);
}

/** The archived bytes of a hash when SQL holds them (document_archive.content); undefined for a file archive. */
export async function readInlineArchive(db: SqlExecutor, hash: string): Promise<Buffer | undefined> {
  const [row] = await db.query<{ content: Buffer | null }>(
    'SELECT content FROM document_archive WHERE content_hash = ?',
    [hash],
  );
  return row?.content ?? undefined;
}

/**
 * Archive rows with their bytes, a statement per INLINE_STATEMENT_BYTES or so (in the caller's transaction, if
 * any). A row of the same hash without bytes (archived as a file before) gets them too, so a hash archived inline
 * always has its bytes in SQL, whatever became of the file.
 */
async function putInlineRows(
  db: SqlExecutor,
  rows: ReadonlyArray<{ file: ArchivedFile; bytes: Uint8Array }>,
): Promise<void> {
  const now = sqlTime();
  for (let start = 0; start < rows.length; ) {
    let end = start;
    let bytes = 0;
    while (end < rows.length && (end === start || bytes + rows[end]!.bytes.length <= INLINE_STATEMENT_BYTES))
      bytes += rows[end++]!.bytes.length;
    const slice = rows.slice(start, end);
    const values = slice.map(() => '(?, ?, ?, ?, ?)').join(', ');
    await db.run(
      db.dialect === 'mysql'
        ? `INSERT INTO document_archive (content_hash, byte_size, storage_path, content, captured_at) VALUES ${values}
           ON DUPLICATE KEY UPDATE content = COALESCE(content, VALUES(content))`
        : `INSERT INTO document_archive (content_hash, byte_size, storage_path, content, captured_at) VALUES ${values}
           ON CONFLICT (content_hash) DO UPDATE SET content = excluded.content WHERE document_archive.content IS NULL`,
      slice.flatMap(({ file, bytes }) => [file.hash, file.size, file.path, bytes, now]),
    );
    start = end;
  }
}

/**
 * What the scan archives, from the bytes it read to hash them: files up to INLINE_ARCHIVE_BYTES as rows with
 * their bytes, written in batches (a transaction per INLINE_FLUSH_BYTES or INLINE_FLUSH_ROWS), larger ones as
 * files at once. A row is missing until the flush that writes it: the scan flushes before it returns (a scan
 * that fails before leaves files to be archived from their source when they are processed, as for any miss).
 */
export class ArchiveWriter {
  private pending = new Map<string, { file: ArchivedFile; bytes: Uint8Array }>();
  private pendingBytes = 0;

  constructor(
    private readonly db: SqlExecutor,
    private readonly archiveDir: string,
  ) {}

  /** Archives a large file at once; keeps a small one for the next flush. */
  put(hash: string, sourcePath: string, bytes: Uint8Array): void {
    if (bytes.length > INLINE_ARCHIVE_BYTES) {
      writeArchiveFile(this.archiveDir, hash, sourcePath, bytes);
      return;
    }
    if (this.pending.has(hash)) return;
    const file = { hash, size: bytes.length, path: archivePathFor(this.archiveDir, hash, sourcePath) };
    this.pending.set(hash, { file, bytes });
    this.pendingBytes += bytes.length;
  }

  /** Writes the kept rows once they are many or large. */
  async flushIfFull(): Promise<void> {
    if (this.pendingBytes >= INLINE_FLUSH_BYTES || this.pending.size >= INLINE_FLUSH_ROWS) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const rows = [...this.pending.values()];
    this.pending = new Map();
    this.pendingBytes = 0;
    await this.db.transaction((tx) => putInlineRows(tx, rows));
  }
}

/**
 * The archive file `file` as a function that returns its path (DocumentRef.archivePath's getter). With `bytes`
 * (the archive holds them in SQL), the first call writes the file from them: a step that asks for a file path
 * gets one, and a document whose steps all read the bytes never costs a file.
 */
export function archiveFile(file: string, bytes: Uint8Array | undefined): () => string {
  let pending = bytes;
  return () => {
    if (pending !== undefined) {
      writeFileAt(file, pending);
      pending = undefined;
    }
    return file;
  };
}
