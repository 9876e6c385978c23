import { type FSWatcher, watch } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { ignoredName } from './scan.js';

export interface TreeWatcher {
  close(): void;
}

/**
 * Watches a folder and every folder inside it, one `fs.watch` per folder (hidden ones left out), and says which path
 * changed. Not Node's `recursive` watch: on Linux (Node 20) that one watches each file by its inode, so a file saved
 * by writing a copy and renaming it over the original (what editors do) was not seen to change again; it dropped the
 * watches of every path that began with a removed one (`kurs2/` with `kurs/`); and thousands of new files kept it
 * busy for half a minute, reading whole folders again on each event. A folder's watch reports its entries by name,
 * whatever the inode; folders that appear are watched as they come, and those that go are forgotten (with everything
 * below them, and nothing else). `onFail` is called once when the top folder's own watch fails (it was removed).
 */
export function watchTree(
  folder: string,
  onChange: (changed: string) => void,
  onFail: () => void,
): TreeWatcher {
  const watchers = new Map<string, FSWatcher>();
  let closed = false;

  /** the folder and what is below it, forgotten (a folder removed or renamed: its new name is watched anew) */
  const forget = (dir: string) => {
    for (const [watched, watcher] of watchers) {
      if (watched !== dir && !watched.startsWith(`${dir}${path.sep}`)) continue;
      watchers.delete(watched);
      watcher.close();
    }
  };

  /** a path an event named: a folder that is new is watched (with the folders in it), one that is gone forgotten */
  const look = async (changed: string) => {
    const info = await lstat(changed).catch(() => undefined);
    if (closed) return;
    if (!info?.isDirectory()) {
      if (watchers.has(changed)) forget(changed);
      return;
    }
    if (!watchers.has(changed)) await add(changed);
  };

  const add = async (dir: string): Promise<void> => {
    if (closed || watchers.has(dir)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: true }, (_event, name) => {
        if (!name) {
          onChange(dir);
          return;
        }
        const entry = name.toString();
        if (ignoredName(entry)) return;
        const changed = path.join(dir, entry);
        onChange(changed);
        void look(changed);
      });
    } catch {
      // gone before it could be watched: its parent's event said so already
      if (dir === folder) queueMicrotask(onFail);
      return;
    }
    watchers.set(dir, watcher);
    watcher.on('error', () => {
      if (watchers.get(dir) !== watcher) return;
      forget(dir);
      if (dir === folder) onFail();
      else onChange(dir);
    });
    // the folders inside, as they are now (files are the caller's pass to find)
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isDirectory() && !ignoredName(entry.name)) await add(path.join(dir, entry.name));
    }
  };

  void add(folder);
  return {
    close() {
      closed = true;
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
