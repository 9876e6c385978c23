import {
  accessSync,
  type BigIntStats,
  constants,
  type Dirent,
  lstatSync,
  readdirSync,
  readFileSync,
  realpathSync,
  type Stats,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { type Dialect, escapeLike, type SqlExecutor } from '../db/sql.js';
import { inLists, rowSlices } from '../db/statement-shapes.js';
import { ConfigError, ErrorCodes } from '../errors.js';
import { byCodeUnits } from '../util/compare.js';
import { sha256, sha256File } from '../util/hash.js';
import { sqlTime } from '../util/time.js';
import { ArchiveWriter } from './archive.js';
import {
  closeUnreadableItems,
  recordUnreadableItems,
  UNREADABLE_HASH,
  type UnreadableItem,
} from './queue.js';

export type ScanDecision = 'new' | 'update' | 'unchanged' | 'delete';

export interface ScanEntry {
  path: string;
  decision: ScanDecision;
  hash: string;
  size: number;
  /** the document row this decision was made against */
  documentId: number | null;
  /** the file's stat signature when it was scanned (absent for deletions) */
  statKey?: string;
  /** the hash came from `source_files` (same stat signature), the file was not read */
  fromStatCache?: boolean;
  /** the signature may be recorded: the file was last written well before the scan began (see recordSourceFiles) */
  settled?: boolean;
}

export interface ScanResult {
  entries: ScanEntry[];
  /** files left out because they changed less than `leaveChangedWithinMs` before the scan */
  leftChanging: string[];
  /** files skipped for their extension */
  ignored: number;
  /** files and folders that could not be read, named, with the reason (neither is taken for deleted) */
  unreadable: Unreadable[];
}

/** A file or folder the scan could not read, and why. */
export interface Unreadable {
  path: string;
  reason: string;
  /** a folder that could not be listed: the documents under it are kept */
  folder?: boolean;
  /** a file that is there but could not be looked at: its document is kept */
  kept?: boolean;
  /**
   * a file the scan would take for a document, there but not readable (permissions, a name not in UTF-8): a failure
   * of that file (recordUnreadableFiles), with its document's id when it has one
   */
  file?: { documentId: number | null };
}

export interface ScanOptions {
  /** lower-case extensions with the dot */
  extensions: readonly string[];
  /** follow symbolic links that stay inside the source folder */
  followSymlinks: boolean;
  /** files hashed at once */
  hashConcurrency?: number;
  /** trust the hash recorded in `source_files` for a file whose stat signature is unchanged (default true) */
  useStatCache?: boolean;
  /** copy the bytes of new and changed files into this content-addressed archive while they are hashed */
  archiveDir?: string;
  /**
   * a file changed less than this long before the scan began is read again next time (default: 100 ms where the
   * file system keeps sub-second times, 2000 ms where it keeps whole seconds, as FAT, HFS+ and some NFS servers do)
   */
  settleMs?: number;
  /**
   * leave out a file changed less than this long before the scan began: it is still being written (`cpe watch`,
   * whose next pass comes after the file's last change); it is neither read nor queued, nor taken for deleted
   */
  leaveChangedWithinMs?: number;
  /**
   * called once, at the first file found new or changed (or, after the scan, the first one gone); a notice only:
   * what it throws is ignored, so that it cannot make a file look unreadable
   */
  onChange?: () => void;
}

/** Files below this size are read in one go (and archived from the same bytes); larger ones are streamed. */
const WHOLE_FILE_BYTES = 4 * 1024 * 1024;
/**
 * A file written less than this long before the scan began may be written again within the same timestamp granule
 * (the kernel stamps files from a clock that advances in ticks of up to 10 ms; some file systems keep whole
 * seconds): its signature is not kept, so the next scan reads it again (the "racy file" rule git also follows).
 */
const SETTLE_FINE_MS = 100;
const SETTLE_COARSE_MS = 2000;

interface ListedFile {
  path: string;
  size: number;
  statKey: string;
  /** the change time (ctime), ns */
  changedNs: bigint;
}

const statKeyOf = (info: BigIntStats) =>
  `${info.size}:${info.mtimeNs}:${info.ctimeNs}:${info.ino}:${info.dev}`;

/**
 * Why a path listed in a folder could not be opened. Node reads file names as UTF-8: a name in another encoding
 * (Latin-1 from an old archive, say) comes back with U+FFFD in place of its bad bytes, and no file has that name.
 */
function notOpened(what: string, file: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code ?? 'error';
  if (code === 'ENOENT' && path.basename(file).includes('\uFFFD'))
    return `${what}: the name is not valid UTF-8 and cannot be opened as listed; rename it in UTF-8`;
  return `${what} (${code})`;
}

/**
 * Names a scan (and a watch) passes over: hidden files and folders, and the lock and temporary files office programs
 * keep beside an open document ("~$Handbuch.docx", "~WRL0001.tmp"), which are no documents.
 */
export const ignoredName = (name: string): boolean =>
  name.startsWith('.') || name.startsWith('~$') || name.startsWith('~WRL');

/**
 * Whether a scan would list the file at this path as a document, whatever its extension (one the detect step no
 * longer lists is out of scope, not gone: see goneFromSource): it is there, a regular file and not a symbolic
 * link, and its name is not one scans pass over; with the source folder known, it is inside that folder once
 * links on its way are followed (a folder replaced by a link to a folder elsewhere is not followed by the scan).
 * A delete item skips a file that is back only then: a file replaced by a link, now named like an office lock
 * file, or under a folder now replaced by a file (ENOTDIR) or a link leaving the source, is gone for the scan, and
 * so for the index; so is one reached through a link to a folder of the source, which the scan lists by its real
 * path.
 */
export function listableFile(file: string, sourceRoot?: string): boolean {
  try {
    const info = lstatSync(file, { throwIfNoEntry: false });
    if (info?.isFile() !== true || ignoredName(path.basename(file))) return false;
    if (sourceRoot === undefined) return true;
    const root = realpathSync(sourceRoot);
    const real = realpathSync(file);
    if (!real.startsWith(`${root}${path.sep}`)) return false;
    // through a link to a folder inside the source: the scan lists the file by its real path, unless that passes a
    // hidden folder (then only links lead to it)
    const realPath = path.relative(root, real);
    return (
      path.relative(path.resolve(sourceRoot), path.resolve(file)) === realPath ||
      realPath.split(path.sep).some(ignoredName)
    );
  } catch {
    return false; // not a folder on its way (ENOTDIR), a loop of links, no permission: not there for a scan
  }
}

/** Whether a file's extension is one of `extensions` (lower-case, with the dot), whatever the case of its name. */
const hasListedExtension = (file: string, extensions: readonly string[]): boolean =>
  extensions.includes(path.extname(file).toLowerCase());

/**
 * Whether the file of a document that a scan of `sourceRoot` did not list is gone, so that its documents are
 * deleted. A file with an extension the scan lists would have been listed had it been there: it is gone, without a
 * look at the file system. One with another extension (the detect step lists fewer than when it was stored) was
 * passed over, not missed: while it is there it is out of the scan's scope, and its documents are left as they are
 * (a narrower filter retracts nothing; documents are deleted explicitly). That is listableFile, the check a delete
 * item makes before it deletes anything, so the two agree: the scan queues no deletion that the item would refuse
 * run after run. A file really gone is deleted whatever its extension. With `walked`, the folders the scan listed
 * (by the paths it walked them by), a file in one of them costs one lstat: a regular file there is one the scan
 * passed over, as listableFile finds it, without resolving its path.
 */
export function goneFromSource(
  file: string,
  sourceRoot: string,
  extensions: readonly string[],
  walked?: ReadonlySet<string>,
): boolean {
  if (hasListedExtension(file, extensions)) return true;
  if (walked?.has(path.dirname(file))) {
    try {
      const info = lstatSync(file, { throwIfNoEntry: false });
      return info?.isFile() !== true || ignoredName(path.basename(file));
    } catch {
      // not to be looked at (a folder that may be read but not searched): as listableFile decides
    }
  }
  return !listableFile(file, sourceRoot);
}

/**
 * Lists the files of a source folder recursively: hidden files and folders ignored (and office lock files), symbolic links leaving the
 * folder (or looping) not followed. What cannot be opened is reported in `unreadable` with its reason and the
 * walk goes on: a name that is not UTF-8, a dangling link named like a document, a link leaving the folder (to a
 * folder or a document). Yields absolute paths. Synchronous calls on purpose: on this kind of machine
 * an awaited fs.promises.stat costs ~50 µs of the event loop's time against ~2 µs for statSync (the thread-pool
 * round trip dominates), and the scan runs before any document work that could be starved. The folders it lists go
 * into `walked`, by the paths it walked them by (see goneFromSource).
 */
function listFiles(
  root: string,
  options: ScanOptions,
  ignoredCount: { n: number },
  unreadable: ScanResult['unreadable'],
  walked: Set<string>,
) {
  const rootReal = realpathSync(root);
  const files: ListedFile[] = [];
  /** the real paths of the folders walked (or to be walked): each folder is walked once */
  const visited = new Set<string>([rootReal]);
  /**
   * Links to folders, walked after every folder reachable without them: a folder is walked by its real path when it
   * has one in the source (whichever name sorts first), through a link only when it has none (a hidden folder).
   */
  const folderLinks: Array<{ path: string; real: string }> = [];
  const inside = (real: string) => real === rootReal || real.startsWith(`${rootReal}${path.sep}`);
  const supported = (name: string) => hasListedExtension(name, options.extensions);
  const walk = (dir: string) => {
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (error) {
      unreadable.push({ path: dir, reason: notOpened('cannot list folder', dir, error), folder: true });
      return;
    }
    walked.add(dir);
    // a fixed order by code unit: localeCompare's first call loads ICU's collator (~12 ms, on every run)
    entries.sort((a, b) => byCodeUnits(a.name, b.name));
    for (const entry of entries) {
      if (ignoredName(entry.name)) continue;
      const full = path.join(dir, entry.name);
      let isDir = entry.isDirectory();
      let isFile = entry.isFile();
      if (entry.isSymbolicLink()) {
        if (!options.followSymlinks) continue;
        let real: string;
        let info: Stats;
        try {
          real = realpathSync(full);
          info = statSync(real);
        } catch (error) {
          // a dangling link (or a loop of links) named like a document is a document that cannot be read
          if (supported(entry.name))
            unreadable.push({ path: full, reason: notOpened('broken symbolic link', full, error) });
          continue;
        }
        isDir = info.isDirectory();
        isFile = info.isFile();
        if (!inside(real)) {
          if (isDir || (isFile && supported(entry.name)))
            unreadable.push({
              path: full,
              reason: `symbolic link to ${real}, outside the source folder: not followed`,
            });
          continue;
        }
        if (isDir) {
          folderLinks.push({ path: full, real });
          continue;
        }
      } else if (isDir) {
        let real: string;
        try {
          real = realpathSync(full);
        } catch (error) {
          unreadable.push({ path: full, reason: notOpened('cannot list folder', full, error), folder: true });
          continue;
        }
        // walked already through a link of its parent's (a folder reached only through links)
        if (visited.has(real)) continue;
        visited.add(real);
      }
      if (isDir) {
        walk(full);
      } else if (isFile) {
        if (!supported(entry.name)) {
          ignoredCount.n++;
          continue;
        }
        try {
          const info = statSync(full, { bigint: true });
          files.push({
            path: full,
            size: Number(info.size),
            statKey: statKeyOf(info),
            changedNs: info.ctimeNs, // any write or utimes() sets the change time to now
          });
        } catch (error) {
          // listed but not looked at (a folder that may be read but not searched): its document is kept; one
          // gone between the listing and now is gone (a name not in UTF-8 is there, but cannot be opened as listed)
          const gone =
            (error as NodeJS.ErrnoException).code === 'ENOENT' && !path.basename(full).includes('\uFFFD');
          unreadable.push({
            path: full,
            reason: notOpened('cannot stat', full, error),
            kept: !gone,
            ...(!gone && { file: { documentId: null } }),
          });
        }
      }
    }
  };
  walk(path.resolve(root));
  // in the order found; walking one may find more
  for (let i = 0; i < folderLinks.length; i++) {
    const link = folderLinks[i]!;
    if (visited.has(link.real)) continue;
    visited.add(link.real);
    walk(link.path);
  }
  return files;
}

/**
 * A condition on `column` that holds for exactly the paths under `folder` (in it or a folder below): case, accents,
 * `%` and `_` count, so a sibling `Kurs` is not under `kurs`. SQLite: a range in its byte order (BINARY), as every
 * path that starts with `<folder>/`, and no other, sorts from it to `<folder>0` ('0' follows '/'); its LIKE ignores
 * case. MariaDB/MySQL: LIKE on the binary collation the path columns have (migration 0008), which neither ignores
 * case nor pads with spaces as a range there would. Both use the column's index.
 */
export function pathsUnder(
  dialect: Dialect,
  column: string,
  folder: string,
): { sql: string; params: string[] } {
  const prefix = `${path.resolve(folder)}${path.sep}`;
  if (dialect === 'mysql') return { sql: `${column} LIKE ? ESCAPE '!'`, params: [`${escapeLike(prefix)}%`] };
  const after = `${prefix.slice(0, -1)}${String.fromCharCode(path.sep.charCodeAt(0) + 1)}`;
  return { sql: `(${column} >= ? AND ${column} < ?)`, params: [prefix, after] };
}

/**
 * The path a source folder's documents are stored under: its real path, symbolic links resolved, so that the
 * folder reached through a link and by its real path is one set of documents, not two. A folder whose documents
 * were stored under a link's path (before cpe resolved links) keeps that path while none are stored under the
 * real one: they are neither added a second time nor left behind. A folder that cannot be resolved (gone, not
 * readable) is taken as given.
 */
export async function storedSourceRoot(db: SqlExecutor, folder: string): Promise<string> {
  const given = path.resolve(folder);
  let real: string;
  try {
    real = realpathSync(given);
  } catch {
    return given;
  }
  if (real === given) return real;
  const storedUnder = async (root: string) => {
    const under = pathsUnder(db.dialect, 'source_path', root);
    return (
      (await db.query(`SELECT 1 AS one FROM documents WHERE ${under.sql} LIMIT 1`, under.params)).length > 0
    );
  };
  return (await storedUnder(real)) || !(await storedUnder(given)) ? real : given;
}

/** storedSourceRoot for one file (`cpe file`): the path it is stored under, in its folder's stored path. */
export async function storedFilePath(db: SqlExecutor, file: string): Promise<string> {
  const given = path.resolve(file);
  return path.join(await storedSourceRoot(db, path.dirname(given)), path.basename(given));
}

/**
 * The source folder, resolved; a configuration error when it is missing or not a folder. The commands that scan
 * call it before a run starts (found by the scan, it failed the run's detect step: exit 1, the reason three times).
 */
export function sourceFolder(source: string): string {
  const dir = path.resolve(source);
  const info = statSync(dir, { throwIfNoEntry: false });
  if (!info) throw new ConfigError(ErrorCodes.USAGE, `source folder ${dir} does not exist`);
  if (!info.isDirectory()) throw new ConfigError(ErrorCodes.USAGE, `source ${dir} is not a folder`);
  try {
    accessSync(dir, constants.R_OK | constants.X_OK);
  } catch (error) {
    throw new ConfigError(
      ErrorCodes.USAGE,
      `source folder ${dir} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  return dir;
}

/**
 * Decides per file against `documents`: new, update (hash changed), unchanged, and delete for documents whose
 * file is gone from the folder. Reads each file at most once (SHA-256 in large blocks) and not at all when its
 * stat signature is the one recorded with its hash in `source_files` (unless useStatCache is false). With
 * `archiveDir`, new and changed files are archived from the bytes that were hashed (small ones in
 * `document_archive`, see ArchiveWriter: the only SQL the scan writes).
 */
export async function scanSource(
  db: SqlExecutor,
  sourceDir: string,
  options: ScanOptions,
): Promise<ScanResult> {
  const root = sourceFolder(sourceDir);

  const ignored = { n: 0 };
  const unreadable: ScanResult['unreadable'] = [];
  // Date.now() is whole milliseconds: +1 so that a file written in the current millisecond is before "now"
  const nowMs = Date.now() + 1;
  const settledBefore = (ms: number) => BigInt(nowMs - ms) * 1_000_000n;
  const fineBeforeNs = settledBefore(options.settleMs ?? SETTLE_FINE_MS);
  const coarseBeforeNs = settledBefore(options.settleMs ?? SETTLE_COARSE_MS);
  // whole-second change times: a file system with coarse timestamps (one in 10^9 fine ones looks so too: safe)
  const isSettled = (changedNs: bigint) =>
    changedNs < (changedNs % 1_000_000_000n === 0n ? coarseBeforeNs : fineBeforeNs);
  const changingAfterNs =
    options.leaveChangedWithinMs === undefined ? undefined : settledBefore(options.leaveChangedWithinMs);
  const leftChanging: string[] = [];
  /** the folders listed, by the paths walked (see goneFromSource) */
  const walked = new Set<string>();
  const files = listFiles(root, options, ignored, unreadable, walked);

  const recorded = new Map<string, { statKey: string; hash: string }>();
  if (options.useStatCache !== false) {
    const under = pathsUnder(db.dialect, 'path', root);
    const rows = await db.query<{ path: string; stat_key: string; content_hash: string }>(
      `SELECT path, stat_key, content_hash FROM source_files WHERE ${under.sql}`,
      under.params,
    );
    for (const row of rows) recorded.set(row.path, { statKey: row.stat_key, hash: row.content_hash });
  }

  // newest non-deleted version per path under the folder, in one query
  const known = new Map<string, { id: number; hash: string; version: number }>();
  const under = pathsUnder(db.dialect, 'source_path', root);
  const rows = await db.query<{ id: number; source_path: string; content_hash: string; version: number }>(
    `SELECT id, source_path, content_hash, version FROM documents WHERE status <> 'deleted' AND ${under.sql}`,
    under.params,
  );
  for (const row of rows) {
    const current = known.get(row.source_path);
    if (!current || Number(row.version) > current.version) {
      known.set(row.source_path, {
        id: Number(row.id),
        hash: row.content_hash,
        version: Number(row.version),
      });
    }
  }
  const queued = await queuedContent(db, root);

  const entries: ScanEntry[] = new Array(files.length);
  let changeReported = false;
  const changed = () => {
    if (changeReported) return;
    changeReported = true;
    try {
      options.onChange?.();
    } catch {
      // a notice: the scan goes on
    }
  };
  const archive = options.archiveDir ? new ArchiveWriter(db, options.archiveDir) : undefined;
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const index = next++;
      const file = files[index]!;
      if (changingAfterNs !== undefined && file.changedNs >= changingAfterNs) {
        leftChanging.push(file.path);
        continue;
      }
      try {
        const doc = known.get(file.path);
        const settled = isSettled(file.changedNs);
        const cached = recorded.get(file.path);
        if (cached && cached.statKey === file.statKey && settled) {
          const decision: ScanDecision = !doc ? 'new' : doc.hash === cached.hash ? 'unchanged' : 'update';
          if (decision !== 'unchanged') changed();
          if (decision === 'unchanged' || !options.archiveDir) {
            entries[index] = {
              path: file.path,
              decision,
              hash: cached.hash,
              size: file.size,
              documentId: doc?.id ?? null,
              statKey: file.statKey,
              fromStatCache: true,
              settled,
            };
            continue;
          }
          // queued again (e.g. its document was deleted from SQL): read it, so that the archive gets its bytes
        }
        let hash: string;
        let size: number;
        let bytes: Buffer | undefined;
        if (archive && file.size < WHOLE_FILE_BYTES) {
          bytes = readFileSync(file.path); // small and local: see listFiles on synchronous calls
          hash = sha256(bytes);
          size = bytes.length;
        } else {
          ({ hash, size } = await sha256File(file.path));
        }
        const decision: ScanDecision = !doc ? 'new' : doc.hash === hash ? 'unchanged' : 'update';
        if (decision !== 'unchanged') changed();
        if (bytes && decision !== 'unchanged') archive!.put(hash, file.path, bytes);
        entries[index] = {
          path: file.path,
          decision,
          hash,
          size,
          documentId: doc?.id ?? null,
          statKey: file.statKey,
          settled: settled && size === file.size,
        };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'error';
        // gone since it was listed: no failure of the file (the next scan finds it gone)
        unreadable.push({
          path: file.path,
          reason: `cannot read (${code})`,
          ...(code !== 'ENOENT' && { file: { documentId: null } }),
        });
      }
      // outside the file's try: a failing write of archive rows is the scan's failure, not this file's
      await archive?.flushIfFull();
    }
  };
  await Promise.all(Array.from({ length: options.hashConcurrency ?? 4 }, worker));
  await archive?.flush();
  const result = entries.filter(Boolean);
  const seen = new Set(files.map((f) => f.path));
  // a folder that could not be listed (permissions, a mount gone) says nothing about the files in it
  const unlisted = unreadable.filter((u) => u.folder).map((u) => `${u.path}${path.sep}`);
  const underUnlisted = (file: string) => unlisted.some((folder) => file.startsWith(folder));
  for (const u of unreadable) {
    if (u.kept) seen.add(u.path);
    if (u.file) u.file.documentId = known.get(u.path)?.id ?? null;
  }
  // a file the listing does not contain is gone unless its extension is one the scan no longer lists
  const gone = (file: string) =>
    !seen.has(file) && !underUnlisted(file) && goneFromSource(file, root, options.extensions, walked);
  for (const [sourcePath, doc] of known) {
    if (gone(sourcePath)) {
      changed();
      result.push({ path: sourcePath, decision: 'delete', hash: doc.hash, size: 0, documentId: doc.id });
    }
  }
  // a file gone before the item queued for it made a version: deleted too, or that item would make one of it from
  // the bytes the scan archived, the current document of a file that is not there
  for (const [sourcePath, hash] of queued) {
    if (!known.has(sourcePath) && gone(sourcePath)) {
      changed();
      result.push({ path: sourcePath, decision: 'delete', hash, size: 0, documentId: null });
    }
  }
  return { entries: result, leftChanging, ignored: ignored.n, unreadable };
}

/**
 * The files under `root` with a queue item that is still to make a version of them (pending, in flight, or failed
 * with a next attempt due by itself, and no version made yet), each with the newest such item's content hash. An
 * item with a version has its file among the documents (or finds its version deleted, and makes nothing); items of
 * files that could not be read (UNREADABLE_HASH) make none.
 */
async function queuedContent(db: SqlExecutor, root: string): Promise<Map<string, string>> {
  const under = pathsUnder(db.dialect, 'path', root);
  const rows = await db.query<{ path: string; hash: string }>(
    `SELECT path, hash FROM pipeline_queue
     WHERE status IN ('pending', 'processing', 'failed') AND action <> 'delete' AND document_id IS NULL AND hash <> ?
       AND (status <> 'failed' OR next_attempt_at IS NOT NULL) AND ${under.sql}
     ORDER BY id`,
    [UNREADABLE_HASH, ...under.params],
  );
  return new Map(rows.map((row) => [row.path, row.hash]));
}

/**
 * Keeps the stat signatures of scanned files with their hashes (`source_files`), so that the next scan need not
 * read files that did not change. Only settled files are recorded: a file written just before the scan began may
 * be written again within the same timestamp granule, so it is read again next time. Files gone from the folder
 * lose their row.
 */
export async function recordSourceFiles(db: SqlExecutor, entries: readonly ScanEntry[]): Promise<void> {
  const keep = entries.filter((e) => e.decision !== 'delete' && e.statKey && e.settled && !e.fromStatCache);
  const gone = entries.filter((e) => e.decision === 'delete');
  if (keep.length === 0 && gone.length === 0) return;
  const now = sqlTime();
  const upsert =
    db.dialect === 'mysql'
      ? `INSERT INTO source_files (path_hash, path, stat_key, content_hash, checked_at) VALUES %s
         ON DUPLICATE KEY UPDATE path = VALUES(path), stat_key = VALUES(stat_key), content_hash = VALUES(content_hash),
         checked_at = VALUES(checked_at)`
      : `INSERT INTO source_files (path_hash, path, stat_key, content_hash, checked_at) VALUES %s
         ON CONFLICT (path_hash) DO UPDATE SET path = excluded.path, stat_key = excluded.stat_key,
         content_hash = excluded.content_hash, checked_at = excluded.checked_at`;
  await db.transaction(async (tx) => {
    for (const slice of rowSlices(tx.dialect, keep, 200)) {
      await tx.run(
        upsert.replace('%s', slice.map(() => '(?, ?, ?, ?, ?)').join(', ')),
        slice.flatMap((e) => [sha256(e.path), e.path, e.statKey, e.hash, now]),
      );
    }
    for (const list of inLists(gone.map((e) => sha256(e.path)))) {
      await tx.run(`DELETE FROM source_files WHERE path_hash IN (${list.marks})`, list.values);
    }
  });
}

/**
 * Keeps the queue's record of the files a scan of `root` could not read: each such file a failed item with its
 * reason (it is counted and listed as a failure, `cpe status`), and the items of files that can be read again or are
 * gone closed. A file under a folder that could not be listed, or still being written, keeps its item as it is.
 * Returns the files recorded.
 */
export async function recordUnreadableFiles(
  db: SqlExecutor,
  root: string,
  scan: Pick<ScanResult, 'unreadable' | 'leftChanging'>,
  maxAttempts: number,
): Promise<UnreadableItem[]> {
  const files = scan.unreadable.flatMap((u) =>
    u.file ? [{ path: u.path, reason: u.reason, documentId: u.file.documentId }] : [],
  );
  await db.transaction((tx) => recordUnreadableItems(tx, files, maxAttempts));
  const under = `${path.resolve(root)}${path.sep}`;
  const unlisted = scan.unreadable.filter((u) => u.folder).map((u) => `${u.path}${path.sep}`);
  const unsettled = new Set([...files.map((f) => f.path), ...scan.leftChanging]);
  await closeUnreadableItems(db, (file) => {
    if (!file.startsWith(under) || unsettled.has(file) || unlisted.some((folder) => file.startsWith(folder)))
      return undefined;
    return listableFile(file, root) ? 'the file can be read again' : 'the file is gone';
  });
  return files;
}

/** The files under `folder` that the last scan of it could not read (their failed items, see recordUnreadableFiles). */
export async function unreadableFiles(
  db: SqlExecutor,
  folder: string,
): Promise<Array<{ id: number; path: string; error: string }>> {
  const under = pathsUnder(db.dialect, 'path', folder);
  const rows = await db.query<{ id: number; path: string; last_error: string | null }>(
    `SELECT id, path, last_error FROM pipeline_queue WHERE status = 'failed' AND hash = ? AND ${under.sql} ORDER BY path`,
    [UNREADABLE_HASH, ...under.params],
  );
  return rows.map((r) => ({ id: Number(r.id), path: r.path, error: r.last_error ?? 'cannot read' }));
}
