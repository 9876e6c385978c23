import { CpeError, ErrorCodes } from '../errors.js';
import { MAX_RETRY_AFTER_MS } from '../llm/provider-errors.js';
import { evenBatchSize, starterBatchSize } from './batch-size.js';
import { EmbedInputError } from './types.js';

/** What a failed request means for the inputs in it. */
export type RequestFailure =
  /**
   * retry; the same request may succeed later (connection, timeout, 429, 502-504); hostDown: it refused;
   * retryAfterMs: the server's Retry-After, for which the host gets no request
   */
  | { kind: 'transient'; error: Error; hostDown?: boolean; retryAfterMs?: number }
  /** the server rejected these inputs (400, 413, 422) or answered for them with a bad vector: split the batch */
  | { kind: 'input'; error: Error; retry: boolean }
  /**
   * the server failed on the request (500 and the like): the server's fault or an input's, which only its answers
   * to other requests can tell. Retried; then split to find a bad input only as far as the host shows that it
   * works (it answers other requests meanwhile); while nothing shows that, the inputs are not blamed and their
   * callers get this error, which is retryable
   */
  | { kind: 'server'; error: Error }
  /** nothing will help: unknown model, wrong dimension */
  | { kind: 'fatal'; error: Error };

/** A request got no answer while its host answered nothing else either, for `ms` milliseconds. */
export class RequestTimeout extends Error {
  readonly ms: number;

  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'RequestTimeout';
    this.ms = ms;
  }
}

export interface RequestPoolOptions {
  /** named in the error for inputs that could not be embedded */
  model: string;
  hosts: string[];
  /** most inputs per request */
  batchSize: number;
  /** most characters per request, summed over its inputs */
  maxBatchChars: number;
  /** requests in flight per host */
  concurrency: number;
  /**
   * how long a request may wait while its host answers nothing at all: a request queued behind others on a busy
   * host is not timed out as long as the host keeps answering the others
   */
  timeoutMs: number;
  /** retries per request on transient failures, server failures and failures of its inputs that may pass */
  maxRetries: number;
  /** first backoff delay; doubles per retry, with jitter, capped at 8 s */
  retryDelayMs: number;
  /** one request: one vector per input, in order; rejects on any failure, and when the signal aborts */
  send(host: string, input: string[], signal: AbortSignal): Promise<Float32Array[]>;
  /** what a failure means, a RequestTimeout included */
  classify(host: string, error: Error): RequestFailure;
}

const MAX_BACKOFF_MS = 8000;
/** a host that refused a connection is avoided for this long while other hosts are up */
const HOST_COOLDOWN_MS = 5000;

interface Host {
  url: string;
  inFlight: number;
  downUntil: number;
  /** no request before this time (Date.now()): the host's Retry-After */
  pausedUntil: number;
  /** when the host last answered a request with vectors (performance.now()) */
  lastAnswer: number;
  /** small requests still to send: set when the host had nothing to do and a large job came in */
  starters: number;
}

/** One caller's texts. */
interface Job {
  texts: readonly string[];
  vectors: Array<Float32Array | undefined>;
  failures: Array<{ index: number; message: string; error: Error }>;
  /** the first input not yet taken into a request */
  next: number;
  /** inputs that have neither a vector nor a failure yet */
  open: number;
  settled: boolean;
  resolve(vectors: Float32Array[]): void;
  reject(error: Error): void;
  detach(): void;
}

/** One request's inputs: input k is jobs[k].texts[indexes[k]], so one request can serve several callers. */
interface Batch {
  jobs: Job[];
  indexes: number[];
  attempt: number;
  maxRetries: number;
  /** aborts the request in flight when every caller in it gave up */
  controller?: AbortController;
  /** the backoff before the next attempt */
  timer?: ReturnType<typeof setTimeout>;
  /** when the current attempt was sent, and when its host had last answered with vectors then (performance.now()) */
  sentAt: number;
  answeredBefore: number;
  /**
   * since when an answer of the host shows that it works (performance.now()): the batch's first server failure, or
   * for a half the failure of the batch it was split from. An answer before that shows nothing about these inputs.
   */
  since?: number;
  /** split from a batch that failed: it is not halved again merely to find out whether the server works */
  half: boolean;
  /** waiting for the host to show that it works (see serverFailed), with the error it last failed with */
  parked?: Error;
}

function cancelled(): CpeError {
  return new CpeError(ErrorCodes.CANCELLED, 'embedding cancelled');
}

/**
 * Requests to one or more embedding servers, shared by all callers of an embedder: the inputs of concurrent
 * calls (the documents a pipeline embeds at once) wait in one queue and are cut into requests together, so
 * that many small documents fill large requests instead of sending many small ones, and the bound on requests
 * in flight holds per host for all callers together.
 *
 * Request sizes follow the waiting work: when a large job reaches a host that had nothing to do, its first
 * requests are small, so that the server starts at once; the rest is cut into equal requests whose number is a
 * multiple of the request slots, so that the last ones end together (see batch-size.ts). Each time a request
 * ends, the next one is sent: the server always finds the next request waiting in its own queue.
 *
 * A failed request is retried with capped exponential backoff (on any free host); a batch whose inputs the
 * server keeps rejecting is split in halves until the bad inputs are found, so that one bad input fails only
 * itself: its caller gets the others' vectors in an EmbedInputError. A server failure (500) blames an input only
 * while the host answers other requests (see serverFailed): an outage fails the callers retryable instead. A request times out when its host has
 * answered nothing for timeoutMs, not merely because it waited long in a busy server's queue. A caller that
 * cancels gets CANCELLED at once; requests that serve no other caller are aborted.
 */
export class RequestPool {
  private readonly hosts: Host[];
  /** callers with inputs not yet taken into a request, first come first served */
  private readonly queue: Job[] = [];
  /** inputs not yet taken into a request */
  private pending = 0;
  /** the size of requests cut from the queue, set when work comes in */
  private size = 0;
  /** retries and halves of split batches, sent before new inputs */
  private readonly ready: Batch[] = [];
  /** batches in flight, waiting for their backoff, or ready */
  private readonly live = new Set<Batch>();
  private pumpQueued = false;
  /** the pump's timer while every host with a free slot waits out a Retry-After */
  private wake: NodeJS.Timeout | undefined;
  /** batches the server failed on, waiting for an answer to another request (see serverFailed) */
  private readonly parked: Batch[] = [];
  /** when any host last answered a request with vectors (performance.now()) */
  private lastAnswer = 0;

  constructor(private readonly options: RequestPoolOptions) {
    this.hosts = options.hosts.map((url) => ({
      url,
      inFlight: 0,
      downUntil: 0,
      pausedUntil: 0,
      lastAnswer: 0,
      starters: 0,
    }));
  }

  /** One vector per text, in order; rejects with an EmbedInputError when some inputs failed for good. */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    if (signal?.aborted) return Promise.reject(cancelled());
    return new Promise((resolve, reject) => {
      const onAbort = () => this.settle(job, cancelled());
      const job: Job = {
        texts,
        vectors: new Array(texts.length),
        failures: [],
        next: 0,
        open: texts.length,
        settled: false,
        resolve,
        reject,
        detach: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(job);
      this.pending += texts.length;
      this.plan();
      // calls made in the same tick share their first requests
      if (!this.pumpQueued) {
        this.pumpQueued = true;
        queueMicrotask(() => {
          this.pumpQueued = false;
          this.pump();
        });
      }
    });
  }

  /**
   * Sizes the requests for the waiting inputs: the work is cut evenly; when the requests are large (at least
   * twice a starter), each idle host first gets a few small ones, one for each slot its server likely has.
   */
  private plan(): void {
    const { batchSize, concurrency } = this.options;
    const slots = concurrency * this.hosts.length;
    const starter = starterBatchSize(batchSize);
    this.size = evenBatchSize(this.pending, slots, batchSize);
    const large = this.size >= 2 * starter;
    for (const host of this.hosts) {
      if (host.inFlight === 0) host.starters = large ? Math.ceil(concurrency / 2) : 0;
    }
    if (!large) return;
    const starterInputs = starter * this.hosts.reduce((sum, host) => sum + host.starters, 0);
    if (this.pending > starterInputs) {
      this.size = evenBatchSize(this.pending - starterInputs, slots, batchSize);
    }
  }

  /** Sends requests while a host has a free slot and there is work. */
  private pump(): void {
    for (;;) {
      const host = this.freeHost();
      if (!host) {
        this.wakeAfterPause();
        return;
      }
      const batch = this.ready.shift() ?? this.take(host);
      if (!batch) return;
      void this.send(host, batch);
    }
  }

  /** With work waiting and every free host paused by a Retry-After: pump again when the first pause ends. */
  private wakeAfterPause(): void {
    if (this.wake || (this.ready.length === 0 && this.pending === 0)) return;
    const now = Date.now();
    const paused = this.hosts.filter((h) => h.pausedUntil > now && h.inFlight < this.options.concurrency);
    if (paused.length === 0) return;
    const until = Math.min(...paused.map((h) => h.pausedUntil));
    this.wake = setTimeout(() => {
      this.wake = undefined;
      this.pump();
    }, until - now);
  }

  /** The least busy host with a free slot, one that is up if there is one; none while its Retry-After lasts. */
  private freeHost(): Host | undefined {
    const now = Date.now();
    let best: Host | undefined;
    for (const host of this.hosts) {
      if (host.inFlight >= this.options.concurrency || host.pausedUntil > now) continue;
      if (!best) {
        best = host;
        continue;
      }
      const up = host.downUntil <= now;
      const bestUp = best.downUntil <= now;
      if ((up && !bestUp) || (up === bestUp && host.inFlight < best.inFlight)) best = host;
    }
    return best;
  }

  /** The next request's inputs from the queue, bounded by count and characters. */
  private take(host: Host): Batch | undefined {
    if (this.pending === 0) return undefined;
    const { batchSize, maxBatchChars, maxRetries } = this.options;
    let limit = this.size;
    if (host.starters > 0) {
      host.starters--;
      limit = Math.min(limit, starterBatchSize(batchSize));
    }
    const batch: Batch = {
      jobs: [],
      indexes: [],
      attempt: 0,
      maxRetries,
      sentAt: 0,
      answeredBefore: 0,
      half: false,
    };
    let chars = 0;
    while (batch.indexes.length < limit && this.queue.length > 0) {
      const job = this.queue[0];
      const length = job.texts[job.next].length;
      if (batch.indexes.length > 0 && chars + length > maxBatchChars) break;
      batch.jobs.push(job);
      batch.indexes.push(job.next);
      chars += length;
      this.pending--;
      if (++job.next === job.texts.length) this.queue.shift();
    }
    this.live.add(batch);
    return batch;
  }

  private async send(host: Host, batch: Batch): Promise<void> {
    host.inFlight++;
    const controller = new AbortController();
    batch.controller = controller;
    const { timeoutMs } = this.options;
    const sent = performance.now();
    batch.sentAt = sent;
    batch.answeredBefore = host.lastAnswer;
    let timedOut = false;
    // times out when neither this request nor any other to the host was answered for timeoutMs
    const watch = () => {
      const quiet = performance.now() - Math.max(sent, host.lastAnswer);
      if (quiet < timeoutMs) {
        watchdog = setTimeout(watch, timeoutMs - quiet);
        return;
      }
      timedOut = true;
      controller.abort();
    };
    let watchdog = setTimeout(watch, timeoutMs);
    let vectors: Float32Array[] | undefined;
    let failure: RequestFailure | undefined;
    try {
      const input = batch.indexes.map((index, k) => batch.jobs[k].texts[index]);
      vectors = await this.options.send(host.url, input, controller.signal);
      host.lastAnswer = performance.now();
      this.lastAnswer = host.lastAnswer;
    } catch (error) {
      if (timedOut) failure = this.options.classify(host.url, new RequestTimeout(timeoutMs));
      else if (!controller.signal.aborted) failure = this.options.classify(host.url, error as Error);
    } finally {
      clearTimeout(watchdog);
      host.inFlight--;
      batch.controller = undefined;
    }
    // a batch no longer live was given up by all its callers while in flight
    if (this.live.has(batch)) {
      if (vectors) this.deliver(batch, vectors);
      else if (failure) this.failed(host, batch, failure);
    }
    // a host that answered shows the server works: the batches waiting for that are tried again
    if (vectors) this.unpark();
    this.pump();
    this.giveUpParked();
  }

  private deliver(batch: Batch, vectors: Float32Array[]): void {
    this.live.delete(batch);
    batch.jobs.forEach((job, k) => {
      if (job.settled) return;
      job.vectors[batch.indexes[k]] = vectors[k];
      if (--job.open === 0) this.complete(job);
    });
  }

  private failed(host: Host, batch: Batch, failure: RequestFailure): void {
    if (failure.kind === 'server') {
      this.serverFailed(batch, failure.error);
      return;
    }
    if (failure.kind === 'transient' && failure.hostDown) host.downUntil = Date.now() + HOST_COOLDOWN_MS;
    if (failure.kind === 'transient' && failure.retryAfterMs !== undefined)
      host.pausedUntil = Math.max(
        host.pausedUntil,
        Date.now() + Math.min(MAX_RETRY_AFTER_MS, failure.retryAfterMs),
      );
    const retry = failure.kind === 'transient' || (failure.kind === 'input' && failure.retry);
    if (failure.kind !== 'fatal' && retry && batch.attempt < batch.maxRetries) this.retryLater(batch);
    else if (failure.kind === 'input') this.split(batch, failure.error);
    else this.failBatch(batch, failure.error);
  }

  /**
   * A server failure (500): retried with backoff like any failure. Then its inputs are blamed (the batch halved, a
   * single input failed) only when its host answered another request after the batch first failed and before it
   * was sent the last time: the host works, and keeps failing on these inputs. Until then a batch is halved once, so
   * that its halves can show it (one half answered while the other keeps failing), and then waits for an answer to
   * any request to be tried again; when nothing is left that could answer, its callers fail with the server's
   * error, which is retryable. An outage is not a bad input: a document whose requests all fail is retried later,
   * instead of some of its chunks being marked failed for good.
   */
  private serverFailed(batch: Batch, error: Error): void {
    batch.since ??= performance.now();
    if (batch.attempt < batch.maxRetries) this.retryLater(batch);
    else if (batch.answeredBefore > batch.since || (!batch.half && batch.indexes.length > 1))
      this.split(batch, error);
    // an answer came in while this attempt was under way: one more attempt shows whether it was the inputs
    else if (this.lastAnswer > batch.sentAt) this.retryNow(batch);
    else {
      batch.parked = error;
      this.parked.push(batch);
    }
  }

  /** One more attempt at once, for a batch whose retries are used up. */
  private retryNow(batch: Batch): void {
    batch.maxRetries = ++batch.attempt;
    this.ready.push(batch);
  }

  /** A host answered: the batches waiting for that get one more attempt (sent by the pump). */
  private unpark(): void {
    for (const batch of this.parked.splice(0)) {
      batch.parked = undefined;
      this.retryNow(batch);
    }
  }

  /**
   * When nothing is in flight, waiting or queued that could show that the server works, the waiting batches fail:
   * their callers get the server's error (retryable), not an input's.
   */
  private giveUpParked(): void {
    if (this.parked.length === 0 || this.pending > 0 || this.live.size > this.parked.length) return;
    for (const batch of this.parked.splice(0)) {
      const error = batch.parked!;
      batch.parked = undefined;
      this.failBatch(batch, error);
    }
  }

  private retryLater(batch: Batch): void {
    batch.attempt++;
    const cap = Math.min(MAX_BACKOFF_MS, this.options.retryDelayMs * 2 ** (batch.attempt - 1));
    batch.timer = setTimeout(
      () => {
        batch.timer = undefined;
        this.ready.push(batch);
        this.pump();
      },
      cap / 2 + Math.random() * (cap / 2),
    );
  }

  /** Halves of a batch whose inputs failed, sent next; a single input that failed is that input's failure. */
  private split(batch: Batch, error: Error): void {
    this.live.delete(batch);
    if (batch.indexes.length === 1) {
      const job = batch.jobs[0];
      if (job.settled) return;
      job.failures.push({ index: batch.indexes[0], message: error.message, error });
      if (--job.open === 0) this.complete(job);
      return;
    }
    const half = Math.ceil(batch.indexes.length / 2);
    const now = performance.now();
    const halves = [
      [0, half],
      [half, batch.indexes.length],
    ]
      .map(
        ([from, to]): Batch => ({
          jobs: batch.jobs.slice(from, to),
          indexes: batch.indexes.slice(from, to),
          attempt: 0,
          maxRetries: 1,
          sentAt: 0,
          answeredBefore: 0,
          since: now,
          half: true,
        }),
      )
      .filter((part) => part.jobs.some((job) => !job.settled));
    for (const part of halves) this.live.add(part);
    this.ready.unshift(...halves);
  }

  /** A request failed for good: every caller in it fails with its error. */
  private failBatch(batch: Batch, error: Error): void {
    this.live.delete(batch);
    for (const job of new Set(batch.jobs)) this.settle(job, error);
  }

  private complete(job: Job): void {
    job.failures.sort((a, b) => a.index - b.index);
    if (job.failures.length === 0) this.settle(job);
    // every input failed: that is the server's problem, not the inputs'
    else if (job.failures.length === job.texts.length) this.settle(job, job.failures[0].error);
    else {
      const failures = job.failures.map(({ index, message }) => ({ index, message }));
      this.settle(job, new EmbedInputError(this.options.model, job.vectors, failures));
    }
  }

  private settle(job: Job, error?: Error): void {
    if (job.settled) return;
    job.settled = true;
    job.detach();
    if (job.next < job.texts.length) {
      this.pending -= job.texts.length - job.next;
      job.next = job.texts.length;
      this.queue.splice(this.queue.indexOf(job), 1);
    }
    if (error) {
      this.dropOrphans();
      job.reject(error);
    } else {
      job.resolve(job.vectors as Float32Array[]);
    }
  }

  /** Stops the requests and retries that no caller waits for any more. */
  private dropOrphans(): void {
    for (const batch of this.live) {
      if (batch.jobs.some((job) => !job.settled)) continue;
      this.live.delete(batch);
      batch.controller?.abort();
      if (batch.timer) clearTimeout(batch.timer);
      const at = this.ready.indexOf(batch);
      if (at >= 0) this.ready.splice(at, 1);
      const parkedAt = this.parked.indexOf(batch);
      if (parkedAt >= 0) this.parked.splice(parkedAt, 1);
    }
    // what is left waiting may now have nothing left that could show the server works
    this.giveUpParked();
  }
}
