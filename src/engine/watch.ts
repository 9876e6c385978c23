import { type Stats, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { type TreeWatcher, watchTree } from './tree-watcher.js';

export interface WatchOptions {
  /** quiet time after the last change before a batch is processed */
  debounceMs: number;
  /** a changed file must keep its size and mtime this long (a file still being written is not read) */
  settleMs: number;
  signal: AbortSignal;
  /** how often the source folder is checked to be there still (default 2 s) */
  rootCheckMs?: number;
  /** called with the changed paths once they have settled; runs one at a time */
  onBatch(paths: string[]): Promise<void>;
  /**
   * run once the watcher is listening, before any batch (what is in the folder already): a change made meanwhile
   * is a batch after it. Its failure ends the watch with that error.
   */
  first?(): Promise<void>;
}

const signature = async (file: string) => {
  const info = await stat(file).catch(() => undefined);
  return info ? `${info.size}:${info.mtimeMs}` : 'gone';
};

/**
 * Whether `now` is the folder `before` was: the same inode and, where the file system keeps one, the same birth time.
 * The inode alone is not enough: a folder removed and made again under its name often gets the number that was freed.
 */
export const sameFolder = (before: Stats, now: Stats): boolean =>
  now.ino === before.ino && (before.birthtimeMs === 0 || now.birthtimeMs === before.birthtimeMs);

/**
 * Watches a folder recursively and calls onBatch with settled changes. Hidden files are ignored. Resolves when
 * the signal aborts (after a batch in progress has finished).
 */
export function watchFolder(folder: string, options: WatchOptions): Promise<void> {
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let busy: Promise<void> = Promise.resolve();
  let watcher: TreeWatcher;

  const flush = async () => {
    const paths = [...pending];
    pending.clear();
    const before = await Promise.all(paths.map(signature));
    await new Promise((r) => setTimeout(r, options.settleMs));
    const after = await Promise.all(paths.map(signature));
    const unsettled = paths.filter((_, i) => before[i] !== after[i]);
    if (unsettled.length) {
      for (const p of unsettled) pending.add(p);
      schedule();
    }
    const settled = paths.filter((_, i) => before[i] === after[i]);
    if (settled.length && !options.signal.aborted) await options.onBatch(settled);
  };
  const schedule = () => {
    if (options.signal.aborted) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      busy = busy.then(flush).catch((error) => {
        process.stderr.write(`cpe watch: ${(error as Error).message}\n`);
      });
    }, options.debounceMs);
  };

  return new Promise((resolve, reject) => {
    let stopped = false;
    // the folder renamed or removed (the recursive watcher may go on watching it where it went, or end quietly):
    // checked by its inode and its birth time. A folder removed and made again under its name may get the inode
    // number that was freed (ext4 often hands it out again), and Linux's recursive watcher says nothing when its
    // root goes: the watch went on quietly, watching nothing, while files were put into the new folder
    const root = statSync(folder);
    const rootCheck = setInterval(() => {
      void stat(folder).then(
        (info) => {
          if (!sameFolder(root, info)) stop(gone());
        },
        () => stop(gone()),
      );
    }, options.rootCheckMs ?? 2000);
    const gone = () => new Error(`source folder ${folder} is gone (removed or renamed): the watch stops`);
    const stop = (error?: Error) => {
      if (stopped) return;
      stopped = true;
      clearInterval(rootCheck);
      if (timer) clearTimeout(timer);
      watcher.close();
      // a pass in progress ends first (its documents finish): the caller closes the databases after this
      void busy.then(() => (error ? reject(error) : resolve()));
    };
    /**
     * The watcher of the folder and the folders inside it (see watchTree). When the folder's own watch fails (it was
     * removed, or replaced), it is started again and the whole folder gets a pass, so that nothing that changed
     * meanwhile is missed; the source folder itself gone ends the watch, saying so.
     */
    let generation = 0;
    const start = () => {
      const mine = ++generation;
      const restart = () => {
        // once per watcher, and not when the watch is stopping
        if (mine !== generation || stopped || options.signal.aborted) return;
        generation++;
        current.close();
        void stat(folder)
          .then((info) => {
            if (!info.isDirectory()) throw new Error('not a folder');
            if (stopped) return;
            start();
            pending.add(folder);
            schedule();
          })
          .catch(() => stop(gone()));
      };
      const current = watchTree(
        folder,
        (changed) => {
          pending.add(changed);
          schedule();
        },
        restart,
      );
      watcher = current;
    };
    start();
    options.signal.addEventListener('abort', () => stop(), { once: true });
    if (options.first) {
      busy = options.first().then(
        () => {
          if (stopped) return;
          // files written just before the watch began were left for a later pass while they settled: one more
          // pass once they have (their own writes raise no event the watcher could see)
          pending.add(folder);
          schedule();
        },
        (error) => stop(error as Error),
      );
    }
  });
}
