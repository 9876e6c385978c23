/**
 * The local embedder on worker threads: the hashing embedder is plain CPU work (a millisecond or more per
 * 2000-character chunk), the largest single cost of an ingestion pass, and on the main thread it waits behind
 * (and holds up) extraction, chunking and SQL. A few workers take it to the other cores.
 *
 * Workers start on first use and are unreferenced while idle, so they never keep the process alive (a CLI
 * command exits as soon as its work is done); a worker is referenced only while it computes a job someone
 * awaits. A call's texts are cut into contiguous parts of similar length (one per worker; more, of at most
 * MAX_PART_CHARS, for a large call), and the parts of concurrent calls are handed out in turn; a worker holds its
 * current part and the next. A worker that throws, dies or is stopped rejects only the part it was computing,
 * with an error that says so; the part queued behind it goes to the next worker.
 * The worker runs the same module tree as the caller (src/util/worker-thread.ts).
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { CpeError, ErrorCodes, ProviderError } from '../errors.js';
import { siblingModuleUrl, spawnModuleWorker } from '../util/worker-thread.js';
import type { LocalEmbedJob, LocalEmbedReply } from './local-pool-worker.js';
import type { PreparedVectors } from './types.js';

const workerUrl = siblingModuleUrl('local-pool-worker', import.meta.url);

/**
 * A worker's young generation (V8 sizes it at 32 MB and more by default): embedding makes only short-lived
 * garbage (words, feature maps), and a small nursery keeps each worker's resident set ~20 MB smaller at no
 * measurable cost in speed.
 */
const WORKER_YOUNG_GENERATION_MB = 4;

/** A worker thread running local-pool-worker. */
export function spawnLocalEmbedWorker(): Worker {
  return spawnModuleWorker(workerUrl, {
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
  });
}

/** One worker per core: embedding is the larger part of an ingestion's CPU work, and an idle worker costs no CPU. */
export function defaultEmbedThreads(): number {
  return Math.max(1, availableParallelism());
}

/**
 * Below this many characters a part is not worth a message of its own: a part of this size is about a
 * millisecond of work, and each message costs the calling thread tens of microseconds to send and take back
 * (16,000 instead of 4,000 after the embedder became 2.6x faster: 1,000 small documents -8% wall time and
 * -0.4 s of CPU, the shared corpus -2%; bench/ingest.ts, package copies A/B).
 */
const MIN_PART_CHARS = 16_000;

/**
 * A part holds at most about this many characters (~35 chunks, ~5 ms of work): a large document's call is cut
 * into many parts, which the queue interleaves with other calls' parts.
 */
const MAX_PART_CHARS = 64_000;

interface Part {
  texts: string[];
  dimensions: number;
  /** the texts are chunk inputs the worker prepares (with this cap) and hashes */
  maxChars?: number;
  settled: boolean;
  resolve(done: PartResult): void;
  reject(error: Error): void;
}

interface PartResult {
  vectors: Float32Array[];
  /** the prepared texts' cache keys, for a part of chunk inputs */
  hashes?: string[];
}

interface Slot {
  worker: Worker;
  /** parts posted to the worker and not answered yet, oldest first (it computes them in this order) */
  jobs: Array<{ id: number; part: Part }>;
  gone: boolean;
}

/**
 * Parts posted to a worker at once: the one it computes and the next, waiting in its message queue. A worker
 * that finishes a part goes straight on to the next instead of idling until this thread, busy with extraction
 * or SQL for tens of milliseconds at a time, gets round to handing it one.
 */
const PARTS_PER_WORKER = 2;

export interface LocalEmbedPoolOptions {
  /** worker threads at most (at least 1) */
  size: number;
  /** names the embedder in error messages */
  name?: string;
  /** starts one worker (default spawnLocalEmbedWorker); tests substitute workers that fail */
  spawn?: () => Worker;
}

/** Contiguous runs of texts with about the same number of characters each, `maxParts` runs at most. */
export function splitByLength(texts: readonly string[], maxParts: number): string[][] {
  const count = Math.max(1, Math.min(maxParts, texts.length));
  const total = texts.reduce((sum, t) => sum + t.length, 0);
  const parts: string[][] = [];
  let current: string[] = [];
  let done = 0;
  for (let i = 0; i < texts.length; i++) {
    current.push(texts[i]!);
    done += texts[i]!.length;
    const left = texts.length - i - 1;
    const wanted = count - parts.length - 1;
    if (wanted > 0 && (left === wanted || (left > wanted && done >= (total * (parts.length + 1)) / count))) {
      parts.push(current);
      current = [];
    }
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

/**
 * Queued parts, taken one call at a time in turn: the next part of the first call, then of the second, ... So a
 * small document's chunks do not wait behind all of a large one's, and the thread that feeds the pool gets
 * finished documents back (and new work to do) while the large one is still being embedded.
 */
class FairQueue {
  private readonly calls: Part[][] = [];

  get length(): number {
    let n = 0;
    for (const call of this.calls) n += call.length;
    return n;
  }

  /** a call's parts, after the calls queued already */
  push(parts: readonly Part[]): void {
    if (parts.length > 0) this.calls.push([...parts]);
  }

  /** parts to take before anything else (a dead worker's queued parts) */
  unshift(parts: readonly Part[]): void {
    if (parts.length > 0) this.calls.unshift([...parts]);
  }

  shift(): Part | undefined {
    const call = this.calls.shift();
    if (!call) return undefined;
    const part = call.shift()!;
    if (call.length > 0) this.calls.push(call);
    return part;
  }

  remove(part: Part): void {
    for (let i = 0; i < this.calls.length; i++) {
      const at = this.calls[i]!.indexOf(part);
      if (at < 0) continue;
      this.calls[i]!.splice(at, 1);
      if (this.calls[i]!.length === 0) this.calls.splice(i, 1);
      return;
    }
  }

  drain(): Part[] {
    return this.calls.splice(0).flat();
  }
}

export class LocalEmbedPool {
  readonly size: number;
  private readonly name: string;
  private readonly spawn: () => Worker;
  private readonly slots: Slot[] = [];
  private readonly queue = new FairQueue();
  private nextId = 1;

  constructor(options: LocalEmbedPoolOptions) {
    this.size = Math.max(1, Math.floor(options.size));
    this.name = options.name ?? 'local embedder';
    this.spawn = options.spawn ?? spawnLocalEmbedWorker;
  }

  /** worker threads running now (started on demand, at most `size`) */
  get threads(): number {
    return this.slots.length;
  }

  /** One vector per text, in order, computed on the workers. */
  async embed(texts: readonly string[], dimensions: number, signal?: AbortSignal): Promise<Float32Array[]> {
    return (await this.run(texts, dimensions, undefined, signal)).flatMap((part) => part.vectors);
  }

  /** Embedder.prepareAndEmbed on the workers: chunk inputs prepared, hashed and embedded there. */
  async prepareAndEmbed(
    inputs: readonly string[],
    maxChars: number,
    dimensions: number,
    signal?: AbortSignal,
  ): Promise<PreparedVectors> {
    const parts = await this.run(inputs, dimensions, maxChars, signal);
    return {
      hashes: parts.flatMap((part) => part.hashes ?? []),
      vectors: parts.flatMap((part) => part.vectors),
    };
  }

  private async run(
    texts: readonly string[],
    dimensions: number,
    maxChars: number | undefined,
    signal?: AbortSignal,
  ): Promise<PartResult[]> {
    signal?.throwIfAborted();
    if (texts.length === 0) return [];
    const chars = texts.reduce((sum, t) => sum + t.length, 0);
    // one part per worker, unless that makes parts tiny or huge
    const count = Math.max(
      1,
      Math.min(this.size, Math.ceil(chars / MIN_PART_CHARS)),
      Math.ceil(chars / MAX_PART_CHARS),
    );
    const parts: Part[] = [];
    const settled = splitByLength(texts, count).map(
      (slice) =>
        new Promise<PartResult>((resolve, reject) => {
          parts.push({ texts: slice, dimensions, maxChars, settled: false, resolve, reject });
        }),
    );
    // an aborted call stops waiting at once; parts not yet started are dropped, running ones finish unread
    const onAbort = () => {
      for (const part of parts) {
        this.queue.remove(part);
        this.settle(part, { error: signal!.reason as Error });
      }
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      this.queue.push(parts);
      this.pump();
      return await Promise.all(settled);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Starts the workers now (idle, not keeping the process alive), so the first call does not wait for them. */
  warmUp(): void {
    while (this.slots.length < this.size) {
      try {
        this.startWorker();
      } catch {
        return; // the first call reports it
      }
    }
  }

  /** Stops every worker; waiting calls reject. The pool starts workers again on its next call. */
  async close(): Promise<void> {
    const stopped = new CpeError(ErrorCodes.CANCELLED, `${this.name}: worker threads were stopped`);
    for (const part of this.queue.drain()) this.settle(part, { error: stopped });
    const slots = this.slots.splice(0);
    for (const slot of slots) {
      slot.gone = true;
      for (const job of slot.jobs.splice(0)) this.settle(job.part, { error: stopped });
    }
    await Promise.all(slots.map((slot) => slot.worker.terminate().catch(() => undefined)));
  }

  private settle(part: Part, outcome: PartResult | { error: Error }): void {
    if (part.settled) return;
    part.settled = true;
    if ('error' in outcome) part.reject(outcome.error);
    else part.resolve(outcome);
  }

  /** Hands queued parts to idle workers, starting workers up to `size`. */
  private pump(): void {
    while (this.queue.length > 0) {
      // an idle worker first, then one with room in its queue, then a new worker
      let slot =
        this.slots.find((s) => s.jobs.length === 0) ??
        (this.slots.length >= this.size
          ? this.slots.find((s) => s.jobs.length < PARTS_PER_WORKER)
          : undefined);
      if (!slot) {
        if (this.slots.length >= this.size) return;
        try {
          slot = this.startWorker();
        } catch (error) {
          const part = this.queue.shift()!;
          this.settle(part, {
            error: new ProviderError(`${this.name}: cannot start a worker thread`, { cause: error }),
          });
          continue;
        }
      }
      const part = this.queue.shift()!;
      const job: LocalEmbedJob = {
        id: this.nextId++,
        texts: part.texts,
        dimensions: part.dimensions,
        maxChars: part.maxChars,
      };
      slot.jobs.push({ id: job.id, part });
      slot.worker.ref();
      slot.worker.postMessage(job);
    }
  }

  private startWorker(): Slot {
    const slot: Slot = { worker: this.spawn(), jobs: [], gone: false };
    slot.worker.on('message', (reply: LocalEmbedReply) => {
      const index = slot.jobs.findIndex((j) => j.id === reply.id);
      if (index < 0) return;
      const { part } = slot.jobs.splice(index, 1)[0]!;
      if (slot.jobs.length === 0) slot.worker.unref();
      if ('vectors' in reply) this.settle(part, { vectors: reply.vectors, hashes: reply.hashes });
      else
        this.settle(part, {
          error: new ProviderError(`${this.name}: a worker thread failed: ${reply.error}`),
        });
      this.pump();
    });
    slot.worker.on('error', (error) => {
      this.retire(
        slot,
        new ProviderError(`${this.name}: a worker thread failed: ${error.message}`, { cause: error }),
      );
    });
    slot.worker.on('messageerror', (error) => {
      this.retire(
        slot,
        new ProviderError(`${this.name}: a worker thread's answer could not be read`, { cause: error }),
      );
    });
    slot.worker.on('exit', (code) => {
      this.retire(slot, new ProviderError(`${this.name}: a worker thread exited (code ${code})`));
    });
    // unreferenced after the listeners are on: adding a 'message' listener references a worker again
    slot.worker.unref();
    this.slots.push(slot);
    return slot;
  }

  /** A worker that failed or exited leaves the pool; its part fails, the next part gets a new worker. */
  private retire(slot: Slot, error: ProviderError): void {
    if (slot.gone) return;
    slot.gone = true;
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    // it was computing its oldest part; the parts queued behind it go to the next worker
    const [current, ...queued] = slot.jobs.splice(0);
    if (current) this.settle(current.part, { error });
    this.queue.unshift(queued.map((job) => job.part).filter((part) => !part.settled));
    void slot.worker.terminate().catch(() => undefined);
    this.pump();
  }
}

const shared = new Map<number, LocalEmbedPool>();

/** The process's pool of `size` workers (embedders with the same thread count share their workers). */
export function sharedLocalEmbedPool(size: number, name?: string): LocalEmbedPool {
  let pool = shared.get(size);
  if (!pool) {
    pool = new LocalEmbedPool({ size, name });
    shared.set(size, pool);
  }
  return pool;
}

/** Stops the workers of every shared pool (they start again when next needed). */
export async function closeLocalEmbedPools(): Promise<void> {
  await Promise.all([...shared.values()].map((pool) => pool.close()));
}
