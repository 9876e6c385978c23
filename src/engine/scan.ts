import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { SqlExecutor } from '../db/sql.js';
import { ConfigError, ErrorCodes } from '../errors.js';
import { sha256File } from '../util/hash.js';

export type ScanDecision = 'new' | 'update' | 'unchanged' | 'delete';

export interface ScanEntry {
  path: string;
  decision: ScanDecision;
  hash: string;
  size: number;
  /** the document row this decision was made against */
  documentId: number | null;
}

export interface ScanResult {
  entries: ScanEntry[];
  /** files skipped for their extension */
  ignored: number;
  /** files that could not be read (named, with the reason) */
  unreadable: Array<{ path: string; reason: string }>;
}

export interface ScanOptions {
  /** lower-case extensions with the dot */
  extensions: readonly string[];
  /** follow symbolic links that stay inside the source folder */
  followSymlinks: boolean;
  /** files hashed at once */
  hashConcurrency?: number;
}

/**
 * Lists the files of a source folder recursively: hidden files and folders ignored, symbolic links leaving the
 * folder (or looping) not followed. Yields absolute paths.
 */
async function listFiles(
  root: string,
  options: ScanOptions,
  ignoredCount: { n: number },
  unreadable: ScanResult['unreadable'],
) {
  const rootReal = await realpath(root);
  const files: Array<{ path: string; size: number }> = [];
  const visited = new Set<string>([rootReal]);
  const inside = (real: string) => real === rootReal || real.startsWith(`${rootReal}${path.sep}`);
  const walk = async (dir: string) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      unreadable.push({
        path: dir,
        reason: `cannot list folder (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      });
      return;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const full = path.join(dir, entry.name);
      let isDir = entry.isDirectory();
      let isFile = entry.isFile();
      if (entry.isSymbolicLink()) {
        if (!options.followSymlinks) continue;
        let real: string;
        try {
          real = await realpath(full);
        } catch {
          continue; // dangling link
        }
        if (!inside(real)) continue;
        const info = await stat(real);
        isDir = info.isDirectory();
        isFile = info.isFile();
        if (isDir) {
          if (visited.has(real)) continue;
          visited.add(real);
        }
      } else if (isDir) {
        visited.add(await realpath(full));
      }
      if (isDir) {
        await walk(full);
      } else if (isFile) {
        if (!options.extensions.includes(path.extname(entry.name).toLowerCase())) {
          ignoredCount.n++;
          continue;
        }
        try {
          files.push({ path: full, size: (await stat(full)).size });
        } catch (error) {
          unreadable.push({
            path: full,
            reason: `cannot stat (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
          });
        }
      }
    }
  };
  await walk(path.resolve(root));
  return files;
}

/**
 * Decides per file against `documents`: new, update (hash changed), unchanged, and delete for documents whose
 * file is gone from the folder. Reads every file once (SHA-256 in large blocks); writes nothing.
 */
export async function scanSource(
  db: SqlExecutor,
  sourceDir: string,
  options: ScanOptions,
): Promise<ScanResult> {
  const root = path.resolve(sourceDir);
  const info = await lstat(root).catch(() => undefined);
  if (!info) throw new ConfigError(ErrorCodes.USAGE, `source folder ${root} does not exist`);
  if (!(await stat(root)).isDirectory())
    throw new ConfigError(ErrorCodes.USAGE, `source ${root} is not a folder`);

  const ignored = { n: 0 };
  const unreadable: ScanResult['unreadable'] = [];
  const files = await listFiles(root, options, ignored, unreadable);

  // newest non-deleted version per path under the folder, in one query
  const known = new Map<string, { id: number; hash: string; version: number }>();
  const rows = await db.query<{ id: number; source_path: string; content_hash: string; version: number }>(
    `SELECT id, source_path, content_hash, version FROM documents WHERE status <> 'deleted' AND source_path LIKE ? ESCAPE '!'`,
    [`${root.replace(/[!%_]/g, (c) => `!${c}`)}${path.sep}%`],
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

  const entries: ScanEntry[] = new Array(files.length);
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const index = next++;
      const file = files[index]!;
      try {
        const { hash, size } = await sha256File(file.path);
        const doc = known.get(file.path);
        const decision: ScanDecision = !doc ? 'new' : doc.hash === hash ? 'unchanged' : 'update';
        entries[index] = { path: file.path, decision, hash, size, documentId: doc?.id ?? null };
      } catch (error) {
        unreadable.push({
          path: file.path,
          reason: `cannot read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        });
      }
    }
  };
  await Promise.all(Array.from({ length: options.hashConcurrency ?? 4 }, worker));
  const result = entries.filter(Boolean);
  const seen = new Set(files.map((f) => f.path));
  for (const [sourcePath, doc] of known) {
    if (!seen.has(sourcePath))
      result.push({ path: sourcePath, decision: 'delete', hash: doc.hash, size: 0, documentId: doc.id });
  }
  return { entries: result, ignored: ignored.n, unreadable };
}
