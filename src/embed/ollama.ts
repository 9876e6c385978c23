import { Ollama } from 'ollama';
import { CpeError, ErrorCodes, isTransientNodeError, ProviderError } from '../errors.js';
import { type Embedder, EmbedInputError, knownDimensions } from './types.js';

export interface OllamaEmbedderOptions {
  /** one or more Ollama base URLs ('http://gpu1:11434'); requests are spread over them */
  hosts: string[];
  model: string;
  /** output size; known models need none, others are probed with one request */
  dimensions?: number;
  /**
   * most inputs per request (default 512): every request costs the server a fixed overhead besides the work per
   * input; at 512 that overhead is a few percent of the request, at 64 it can be a third
   */
  batchSize?: number;
  /** most characters per request, summed over its inputs (default 524288: 512 chunks of 1024 characters) */
  maxBatchChars?: number;
  /**
   * requests in flight per host (default 8). More than the server works on at once (Ollama's
   * OLLAMA_NUM_PARALLEL, often 1-4): the extra ones wait in Ollama's queue, so the server starts the next
   * batch the moment one finishes instead of idling while an answer travels back and the next request is built.
   */
  concurrency?: number;
  /** per request, including time waiting in Ollama's queue (default 300000; a cold Ollama loads the model first) */
  timeoutMs?: number;
  /** retries per request on connection errors, timeouts, 429 and 5xx (default 4) */
  maxRetries?: number;
  /** first backoff delay; doubles per retry, with jitter, capped at 8 s (default 250) */
  retryDelayMs?: number;
}

export const OLLAMA_DEFAULTS = {
  batchSize: 512,
  maxBatchChars: 524_288,
  concurrency: 8,
  timeoutMs: 300_000,
  maxRetries: 4,
  retryDelayMs: 250,
} as const;

/** Below this many inputs per request, splitting a small job over more requests costs more than it saves. */
const MIN_SPREAD_BATCH = 8;
const MAX_BACKOFF_MS = 8000;
/** a host that refused a connection is avoided for this long while other hosts are up */
const HOST_COOLDOWN_MS = 5000;

type Failure =
  /** retry; the same request may succeed later (connection, timeout, 429, 502-504) */
  | { kind: 'transient'; error: Error }
  /** the server rejected these inputs (400, 413, 422) or keeps failing on them (500): split the batch */
  | { kind: 'input'; error: Error; retry: boolean }
  /** nothing will help: unknown model, wrong dimension, cancelled */
  | { kind: 'fatal'; error: Error };

interface Host {
  url: string;
  inFlight: number;
  downUntil: number;
}

export function normalizeHost(host: string): string {
  const trimmed = host.trim().replace(/\/+$/, '');
  return /^https?:\/\//.test(trimmed) ? trimmed : `http://${trimmed}`;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

function cancelled(): CpeError {
  return new CpeError(ErrorCodes.CANCELLED, 'embedding cancelled');
}

/**
 * Embeddings from Ollama's batch endpoint /api/embed through the `ollama` client. A job is cut into requests
 * bounded by input count and characters, spread over the hosts with a bounded number in flight per host.
 * Requests are retried with capped exponential backoff on connection errors, timeouts, 429 and 5xx; a batch the
 * server keeps rejecting is split in halves until the bad inputs are found, so one bad chunk does not fail its
 * document (the others come back in an EmbedInputError).
 */
export class OllamaEmbedder implements Embedder {
  readonly kind = 'ollama' as const;
  readonly model: string;
  readonly location: string;
  private dims: number;
  private readonly hosts: Host[];
  private readonly options: Required<Omit<OllamaEmbedderOptions, 'hosts' | 'model' | 'dimensions'>>;
  private readonly waiters: Array<() => void> = [];

  constructor(options: OllamaEmbedderOptions) {
    if (options.hosts.length === 0) {
      throw new CpeError(ErrorCodes.CONFIG_INVALID, 'Ollama embedder: at least one host is needed');
    }
    this.model = options.model;
    this.hosts = options.hosts.map((h) => ({ url: normalizeHost(h), inFlight: 0, downUntil: 0 }));
    this.location = this.hosts.map((h) => h.url).join(', ');
    this.dims = options.dimensions ?? knownDimensions(options.model) ?? 0;
    this.options = {
      batchSize: options.batchSize ?? OLLAMA_DEFAULTS.batchSize,
      maxBatchChars: options.maxBatchChars ?? OLLAMA_DEFAULTS.maxBatchChars,
      concurrency: options.concurrency ?? OLLAMA_DEFAULTS.concurrency,
      timeoutMs: options.timeoutMs ?? OLLAMA_DEFAULTS.timeoutMs,
      maxRetries: options.maxRetries ?? OLLAMA_DEFAULTS.maxRetries,
      retryDelayMs: options.retryDelayMs ?? OLLAMA_DEFAULTS.retryDelayMs,
    };
    for (const key of ['batchSize', 'maxBatchChars', 'concurrency', 'timeoutMs'] as const) {
      if (!(this.options[key] >= 1)) {
        throw new CpeError(ErrorCodes.CONFIG_INVALID, `Ollama embedder: ${key} must be >= 1`);
      }
    }
  }

  get dimensions(): number {
    return this.dims;
  }

  /** Learns the output size of a model that is not in the known list, with one request. */
  async probeDimensions(signal?: AbortSignal): Promise<number> {
    if (this.dims > 0) return this.dims;
    const [vector] = await this.embed(['Dimension'], signal);
    this.dims = vector.length;
    return this.dims;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const vectors: Array<Float32Array | undefined> = new Array(texts.length);
    const failures: Array<{ index: number; message: string; error: Error }> = [];
    const batches = this.partition(texts);
    let fatal: Error | undefined;
    let next = 0;
    const worker = async () => {
      while (next < batches.length && fatal === undefined) {
        const batch = batches[next++];
        try {
          await this.embedBatch(texts, batch, vectors, failures, signal, false);
        } catch (error) {
          fatal ??= error as Error;
        }
      }
    };
    const workers = Math.min(batches.length, this.options.concurrency * this.hosts.length);
    await Promise.all(Array.from({ length: workers }, worker));
    if (fatal) throw fatal;
    if (failures.length > 0) {
      failures.sort((a, b) => a.index - b.index);
      // every input failed: that is the server's problem, not the inputs'
      if (failures.length === texts.length) throw failures[0].error;
      throw new EmbedInputError(
        this.model,
        vectors,
        failures.map(({ index, message }) => ({ index, message })),
      );
    }
    return vectors as Float32Array[];
  }

  /**
   * Cuts the job into requests of equal size, their number a multiple of the request slots, so that no slot
   * idles while the last requests run (20,000 chunks at batch 512 and 8 slots: 40 requests of 500, not 39 of 512
   * and one of 32). A small job is spread over the slots (a document's 40 chunks as 5 requests of 8 finish sooner
   * than 1 of 40), but not below 8 inputs per request.
   */
  private partition(texts: string[]): number[][] {
    const slots = this.options.concurrency * this.hosts.length;
    const byCount = Math.ceil(texts.length / this.options.batchSize);
    const rounded = Math.ceil(byCount / slots) * slots;
    const size = Math.max(
      Math.min(MIN_SPREAD_BATCH, this.options.batchSize),
      Math.ceil(texts.length / rounded),
    );
    const batches: number[][] = [];
    let current: number[] = [];
    let chars = 0;
    for (let i = 0; i < texts.length; i++) {
      const length = texts[i].length;
      if (current.length > 0 && (current.length >= size || chars + length > this.options.maxBatchChars)) {
        batches.push(current);
        current = [];
        chars = 0;
      }
      current.push(i);
      chars += length;
    }
    if (current.length > 0) batches.push(current);
    return batches;
  }

  private async embedBatch(
    texts: string[],
    indexes: number[],
    out: Array<Float32Array | undefined>,
    failures: Array<{ index: number; message: string; error: Error }>,
    signal: AbortSignal | undefined,
    splitting: boolean,
  ): Promise<void> {
    const result = await this.requestWithRetry(
      indexes.map((i) => texts[i]),
      signal,
      splitting ? 1 : this.options.maxRetries,
    );
    if (Array.isArray(result)) {
      indexes.forEach((index, k) => {
        out[index] = result[k];
      });
      return;
    }
    if (result.kind !== 'input') throw result.error;
    if (indexes.length === 1) {
      failures.push({ index: indexes[0], message: result.error.message, error: result.error });
      return;
    }
    const half = Math.ceil(indexes.length / 2);
    await this.embedBatch(texts, indexes.slice(0, half), out, failures, signal, true);
    await this.embedBatch(texts, indexes.slice(half), out, failures, signal, true);
  }

  /** Vectors, or the failure that remained after the retries. Throws only on cancellation. */
  private async requestWithRetry(
    input: string[],
    signal: AbortSignal | undefined,
    maxRetries: number,
  ): Promise<Float32Array[] | Failure> {
    let last: Failure | undefined;
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      if (signal?.aborted) throw cancelled();
      if (attempt > 0) {
        const cap = Math.min(MAX_BACKOFF_MS, this.options.retryDelayMs * 2 ** (attempt - 1));
        await sleep(cap / 2 + Math.random() * (cap / 2), signal).catch(() => {
          throw cancelled();
        });
      }
      const host = await this.acquireHost(signal);
      try {
        return await this.request(host, input, signal);
      } catch (error) {
        if (signal?.aborted) throw cancelled();
        last = this.classify(host, error as Error);
        if (last.kind === 'fatal') throw last.error;
        if (last.kind === 'input' && !last.retry) return last;
      } finally {
        this.releaseHost(host);
      }
    }
    return last!;
  }

  private async request(
    host: Host,
    input: string[],
    signal: AbortSignal | undefined,
  ): Promise<Float32Array[]> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    // ollama's embed() takes no signal; a fetch bound to this request's signal gives it a timeout and Ctrl-C
    const client = new Ollama({
      host: host.url,
      fetch: (url, init) => fetch(url, { ...init, signal: combined }),
    });
    let response: { embeddings?: unknown };
    try {
      response = await client.embed({ model: this.model, input });
    } catch (error) {
      if (timeout.aborted && !signal?.aborted) {
        throw new ProviderError(`Ollama ${host.url}: no answer within ${this.options.timeoutMs} ms`, {
          cause: error,
        });
      }
      throw error;
    }
    const embeddings = response.embeddings;
    if (!Array.isArray(embeddings) || embeddings.length !== input.length) {
      throw new ProviderError(
        `Ollama ${host.url}: expected ${input.length} embeddings, got ${Array.isArray(embeddings) ? embeddings.length : 'none'}`,
      );
    }
    return embeddings.map((values: unknown) => {
      if (!Array.isArray(values) || values.length === 0) {
        throw new ProviderError(`Ollama ${host.url}: an embedding in the answer is empty`);
      }
      if (this.dims > 0 && values.length !== this.dims) {
        throw new CpeError(
          ErrorCodes.COLLECTION_MISMATCH,
          `Ollama model ${this.model} returned ${values.length}-dimensional vectors, but ${this.dims} are configured; ` +
            'set the embedding dimensions to match the model',
        );
      }
      const vector = Float32Array.from(values as number[]);
      for (let i = 0; i < vector.length; i++) {
        if (!Number.isFinite(vector[i])) {
          throw Object.assign(new Error(`Ollama ${host.url}: the embedding holds a non-finite value`), {
            status_code: 500,
          });
        }
      }
      return vector;
    });
  }

  private classify(host: Host, error: Error): Failure {
    if (error instanceof CpeError && !error.retryable) return { kind: 'fatal', error };
    const status = (error as { status_code?: unknown }).status_code;
    if (typeof status === 'number') {
      const message = `Ollama ${host.url} answered ${status}: ${error.message}`;
      if (status === 404) {
        return {
          kind: 'fatal',
          error: new CpeError(
            ErrorCodes.PROVIDER_UNAVAILABLE,
            `${message} (is the model pulled? run: ollama pull ${this.model})`,
            { cause: error },
          ),
        };
      }
      if (status === 429 || status === 502 || status === 503 || status === 504 || status === 408) {
        return { kind: 'transient', error: new ProviderError(message, { cause: error, status }) };
      }
      if (status === 400 || status === 413 || status === 422) {
        return {
          kind: 'input',
          retry: false,
          error: new ProviderError(message, { cause: error, retryable: false, status }),
        };
      }
      return { kind: 'input', retry: true, error: new ProviderError(message, { cause: error, status }) };
    }
    const cause = (error as { cause?: unknown }).cause;
    if (isTransientNodeError(error) || isTransientNodeError(cause) || error.name === 'TypeError') {
      host.downUntil = Date.now() + HOST_COOLDOWN_MS;
      const code = (cause as { code?: string } | undefined)?.code ?? (error as { code?: string }).code;
      return {
        kind: 'transient',
        error: new ProviderError(`Ollama ${host.url} unreachable: ${code ?? error.message}`, {
          cause: error,
        }),
      };
    }
    if (error instanceof ProviderError) return { kind: 'transient', error };
    return {
      kind: 'transient',
      error: new ProviderError(`Ollama ${host.url}: ${error.message}`, { cause: error }),
    };
  }

  /** The least busy host that is up (or, when all are down, the least busy one): waits for a free slot. */
  private async acquireHost(signal: AbortSignal | undefined): Promise<Host> {
    for (;;) {
      const now = Date.now();
      const free = this.hosts.filter((h) => h.inFlight < this.options.concurrency);
      if (free.length > 0) {
        const up = free.filter((h) => h.downUntil <= now);
        const pool = up.length > 0 ? up : free;
        const host = pool.reduce((a, b) => (b.inFlight < a.inFlight ? b : a));
        host.inFlight++;
        return host;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
      if (signal?.aborted) throw cancelled();
    }
  }

  private releaseHost(host: Host): void {
    host.inFlight--;
    this.waiters.shift()?.();
  }
}

export function createOllamaEmbedder(options: OllamaEmbedderOptions): OllamaEmbedder {
  return new OllamaEmbedder(options);
}
