import { type FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';

export interface WatchOptions {
  /** quiet time after the last change before a batch is processed */
  debounceMs: number;
  /** a changed file must keep its size and mtime this long (a file still being written is not read) */
  settleMs: number;
  signal: AbortSignal;
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
 * Watches a folder recursively and calls onBatch with settled changes. Hidden files are ignored. Resolves when
 * the signal aborts (after a batch in progress has finished).
 */
export function watchFolder(folder: string, options: WatchOptions): Promise<void> {
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let busy: Promise<void> = Promise.resolve();
  let watcher: FSWatcher;

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
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      busy = busy.then(flush).catch((error) => {
        process.stderr.write(`cpe watch: ${(error as Error).message}\n`);
      });
    }, options.debounceMs);
  };

  return new Promise((resolve, reject) => {
    watcher = watch(folder, { recursive: true }, (_event, name) => {
      if (!name) return;
      const relative = name.toString();
      if (relative.split(path.sep).some((part) => part.startsWith('.'))) return;
      pending.add(path.join(folder, relative));
      schedule();
    });
    options.signal.addEventListener(
      'abort',
      () => {
        if (timer) clearTimeout(timer);
        watcher.close();
        void busy.then(() => resolve());
      },
      { once: true },
    );
    if (options.first) {
      busy = options.first().catch((error) => {
        if (timer) clearTimeout(timer);
        watcher.close();
        reject(error);
      });
    }
  });
}
