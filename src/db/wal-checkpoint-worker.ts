/**
 * Entry point of a WAL checkpoint thread (see wal-checkpointer.ts): its own connection to one SQLite file, which
 * copies the write-ahead log back into the database every few hundred milliseconds while the log has grown past
 * a threshold. PASSIVE: it never waits for or blocks the writer; what a reader still needs stays in the log.
 */
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';

/** the part of better-sqlite3 used here (the package has no type declarations of its own) */
interface Connection {
  pragma(source: string): unknown;
  close(): void;
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (
  file: string,
  options: { fileMustExist: boolean },
) => Connection;

export interface CheckpointWorkerData {
  file: string;
  /** the log is checkpointed once it is larger than this */
  thresholdBytes: number;
  intervalMs: number;
}

const { file, thresholdBytes, intervalMs } = workerData as CheckpointWorkerData;
const db = new Database(file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('busy_timeout = 0');

const timer = setInterval(() => {
  const size = statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  // the log file keeps its size when the writer starts over at its beginning: then there is little or nothing
  // new to copy, and a PASSIVE checkpoint returns at once
  if (size < thresholdBytes) return;
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // busy or closing: the next tick tries again, and the writer's own autocheckpoint is the safety net
  }
}, intervalMs);

parentPort?.on('message', (message: unknown) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort?.postMessage('stopped');
});
