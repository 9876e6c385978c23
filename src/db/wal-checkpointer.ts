import { statSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { siblingModuleUrl, spawnModuleWorker } from '../util/worker-thread.js';
import type { CheckpointWorkerData } from './wal-checkpoint-worker.js';

const workerUrl = siblingModuleUrl('wal-checkpoint-worker', import.meta.url);

/** The log is copied back once it is larger than this (SQLite's own default: 1000 pages of 4 KB). */
const THRESHOLD_BYTES = 4 * 1024 * 1024;
const INTERVAL_MS = 200;

/**
 * The writing connection's own checkpoint threshold while a checkpoint thread runs: a safety net for a thread
 * that falls behind or is gone (SQLite's default of 1000 pages would take the work back onto the writer).
 */
export const WRITER_AUTOCHECKPOINT_PAGES = 8192;

/**
 * WAL checkpoints of an SQLite file on a thread of their own. In WAL mode the connection that commits when the
 * log has passed 1000 pages copies the log back into the database file, fsync included, before its commit
 * returns: ~80-110 ms per ingestion pass of the shared corpus that the main thread, which runs the pipeline, spent
 * waiting (bench/ingest.ts). A second connection on a worker thread does it instead, PASSIVE (it never blocks the
 * writer), every INTERVAL_MS while the log is larger than THRESHOLD_BYTES. Started by the first commit that finds
 * the log past THRESHOLD_BYTES, not before: a command that writes little (a run with nothing to do, `cpe file`, most
 * tests) never starts a thread it would not use (~25 ms of CPU to start one, and a second isolate that loads the
 * SQLite addon and must be torn down again). Stopped before the writing connection closes (which checkpoints what
 * is left and removes the log).
 */
export class WalCheckpointer {
  private worker: Worker | undefined;
  private unavailable = false;

  constructor(private readonly file: string) {}

  /**
   * After a commit: starts the thread once the log has grown past THRESHOLD_BYTES (a stat of the log per commit
   * until then). A thread that cannot start leaves checkpoints to the writer, as SQLite does them.
   */
  afterCommit(): void {
    if (this.worker || this.unavailable) return;
    const size = statSync(`${this.file}-wal`, { throwIfNoEntry: false })?.size ?? 0;
    if (size >= THRESHOLD_BYTES) this.start();
  }

  private start(): void {
    try {
      const data: CheckpointWorkerData = {
        file: this.file,
        thresholdBytes: THRESHOLD_BYTES,
        intervalMs: INTERVAL_MS,
      };
      const worker = spawnModuleWorker(workerUrl, { workerData: data });
      worker.on('error', () => this.giveUp(worker));
      worker.on('exit', () => this.giveUp(worker));
      // after the listeners: adding one can reference a worker again, and this one must never keep a process alive
      worker.unref();
      this.worker = worker;
    } catch {
      this.unavailable = true;
    }
  }

  /** whether the thread runs (for tests) */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Stops the thread and closes its connection; waits for both. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    await new Promise<void>((resolve) => {
      worker.once('message', () => resolve());
      worker.once('exit', () => resolve());
      worker.postMessage('stop');
    });
    await worker.terminate();
  }

  private giveUp(worker: Worker): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.unavailable = true;
  }
}
