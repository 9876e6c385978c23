import { CpeError, ErrorCodes, isTransientNodeError, ProviderError } from '../errors.js';
import { maskUrl } from '../util/credentials.js';
import { OllamaHttp, OllamaHttpError } from './ollama-http.js';
import { type RequestFailure, RequestPool, RequestTimeout } from './request-pool.js';
import { type Embedder, knownDimensions } from './types.js';

/** The largest finite float32: vectors are stored as float32. */
const FLOAT32_MAX = 3.4028234663852886e38;

export interface OllamaEmbedderOptions {
  /** one or more Ollama base URLs ('http://gpu1:11434'); requests are spread over them */
  hosts: string[];
  model: string;
  /** output size; known models need none, others are probed with one request */
  dimensions?: number;
  /**
   * most inputs per request (default 1024): every request costs the server a fixed overhead besides the work per
   * input, so fewer, larger requests waste less of it (at 64 inputs it can be a third of the request). A large
   * job is cut into equal requests up to this size, a small one spread over the slots (see batch-size.ts).
   */
  batchSize?: number;
  /** most characters per request, summed over its inputs (default 1048576: 1024 chunks of 1024 characters) */
  maxBatchChars?: number;
  /**
   * requests in flight per host (default 8). More than the server works on at once (Ollama's
   * OLLAMA_NUM_PARALLEL, often 1-4): the extra ones wait in Ollama's queue, so the server starts the next
   * batch the moment one finishes instead of idling while an answer travels back and the next request is built.
   */
  concurrency?: number;
  /**
   * how long a request may wait while its host answers nothing at all (default 300000; a cold Ollama loads the
   * model first). A request waiting in Ollama's queue behind others is not timed out while the host keeps
   * answering them: a slow host is not given up on for being slow, only for answering nothing.
   */
  timeoutMs?: number;
  /** retries per request on connection errors, timeouts, 429 and 5xx (default 4) */
  maxRetries?: number;
  /** first backoff delay; doubles per retry, with jitter, capped at 8 s (default 250) */
  retryDelayMs?: number;
}

export const OLLAMA_DEFAULTS = {
  batchSize: 1024,
  maxBatchChars: 1_048_576,
  concurrency: 8,
  timeoutMs: 300_000,
  maxRetries: 4,
  retryDelayMs: 250,
} as const;

export function normalizeHost(host: string): string {
  const trimmed = host.trim().replace(/\/+$/, '');
  return /^https?:\/\//.test(trimmed) ? trimmed : `http://${trimmed}`;
}

/** An answer that holds a vector Ollama should not have made: like the server failing on these inputs. */
class BadVectorError extends Error {}

/**
 * Embeddings from Ollama's batch endpoint /api/embed (over node:http, see ollama-http.ts). The inputs of all calls go
 * through one RequestPool (request-pool.ts): cut into requests bounded by input count and characters, spread
 * over the hosts with a bounded number in flight per host, retried with capped exponential backoff on
 * connection errors, timeouts, 429 and 5xx; a batch the server keeps rejecting is split in halves until the bad
 * inputs are found, so one bad chunk does not fail its document (the others come back in an EmbedInputError). A
 * 500 blames an input only while the server answers other requests: during an outage nothing is blamed, and the
 * callers get a retryable error.
 */
export class OllamaEmbedder implements Embedder {
  readonly kind = 'ollama' as const;
  readonly model: string;
  readonly location: string;
  private dims: number;
  private readonly pool: RequestPool;
  private readonly http = new OllamaHttp();

  constructor(options: OllamaEmbedderOptions) {
    if (options.hosts.length === 0) {
      throw new CpeError(ErrorCodes.CONFIG_INVALID, 'Ollama embedder: at least one host is needed');
    }
    this.model = options.model;
    const hosts = options.hosts.map(normalizeHost);
    this.location = hosts.map(maskUrl).join(', ');
    this.dims = options.dimensions ?? knownDimensions(options.model) ?? 0;
    const settings = {
      batchSize: options.batchSize ?? OLLAMA_DEFAULTS.batchSize,
      maxBatchChars: options.maxBatchChars ?? OLLAMA_DEFAULTS.maxBatchChars,
      concurrency: options.concurrency ?? OLLAMA_DEFAULTS.concurrency,
      timeoutMs: options.timeoutMs ?? OLLAMA_DEFAULTS.timeoutMs,
      maxRetries: options.maxRetries ?? OLLAMA_DEFAULTS.maxRetries,
      retryDelayMs: options.retryDelayMs ?? OLLAMA_DEFAULTS.retryDelayMs,
    };
    for (const key of ['batchSize', 'maxBatchChars', 'concurrency', 'timeoutMs'] as const) {
      if (!(settings[key] >= 1)) {
        throw new CpeError(ErrorCodes.CONFIG_INVALID, `Ollama embedder: ${key} must be >= 1`);
      }
    }
    this.pool = new RequestPool({
      ...settings,
      model: this.model,
      hosts,
      send: (host, input, signal) => this.request(host, input, signal),
      classify: (host, error) => this.classify(host, error),
    });
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

  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    return this.pool.embed(texts, signal);
  }

  private async request(host: string, input: string[], signal: AbortSignal): Promise<Float32Array[]> {
    const response = (await this.http.post(`${host}/api/embed`, { model: this.model, input }, signal)) as {
      embeddings?: unknown;
    } | null;
    const embeddings = response?.embeddings;
    if (!Array.isArray(embeddings) || embeddings.length !== input.length) {
      throw new ProviderError(
        `Ollama ${maskUrl(host)}: expected ${input.length} embeddings, got ${Array.isArray(embeddings) ? embeddings.length : 'none'}`,
      );
    }
    return embeddings.map((values: unknown) => {
      if (!Array.isArray(values) || values.length === 0) {
        throw new ProviderError(`Ollama ${maskUrl(host)}: an embedding in the answer is empty`);
      }
      if (this.dims > 0 && values.length !== this.dims) {
        throw new CpeError(
          ErrorCodes.COLLECTION_MISMATCH,
          `Ollama model ${this.model} returned ${values.length}-dimensional vectors, but ${this.dims} were expected ` +
            `(the size cpe knows for that name, or the one the server gave when asked): is another model installed ` +
            `under that name? cpe asks the server for the size of a model it does not know`,
        );
      }
      // checked before the conversion: Float32Array.from turns null (and "1") into numbers without a word
      for (const value of values) {
        if (typeof value !== 'number' || !Number.isFinite(value)) {
          throw new BadVectorError('an embedding in the answer holds a value that is not a finite number');
        }
        // a finite double beyond float32's range becomes Infinity in the vector, and NaN once normalised
        if (Math.abs(value) > FLOAT32_MAX) {
          throw new BadVectorError(`an embedding in the answer holds ${value}, beyond the range of float32`);
        }
      }
      return Float32Array.from(values as number[]);
    });
  }

  private classify(host: string, error: Error): RequestFailure {
    if (error instanceof CpeError && !error.retryable) return { kind: 'fatal', error };
    if (error instanceof RequestTimeout) {
      return {
        kind: 'transient',
        error: new ProviderError(`Ollama ${maskUrl(host)}: ${error.message}`, { cause: error }),
      };
    }
    if (error instanceof BadVectorError) {
      return {
        kind: 'input',
        retry: true,
        error: new ProviderError(`Ollama ${maskUrl(host)}: ${error.message}`),
      };
    }
    if (error instanceof OllamaHttpError) {
      const status = error.status;
      const message = `Ollama ${maskUrl(host)} answered ${status}: ${error.message}`;
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
        return {
          kind: 'transient',
          error: new ProviderError(message, { cause: error, status }),
          retryAfterMs: error.retryAfterMs,
        };
      }
      if (status === 400 || status === 413 || status === 422) {
        return {
          kind: 'input',
          retry: false,
          error: new ProviderError(message, { cause: error, retryable: false, status }),
        };
      }
      if (status < 500) {
        // refused whatever is sent (401/403: a proxy's credentials; 3xx: the host moved; 405: not Ollama's API): no
        // input of the batch is to blame, so the batch is not split down to single inputs, and retrying cannot help
        return {
          kind: 'fatal',
          error: new CpeError(
            ErrorCodes.PROVIDER_UNAVAILABLE,
            `${message} (check CPE_OLLAMA_HOST${status === 401 || status === 403 ? ' and its credentials' : ''})`,
            { cause: error },
          ),
        };
      }
      // 500 and the like: Ollama's answer when the model fails on an input (NaN), but also when it fails on its
      // own (out of memory, the runner restarting): the pool tells these apart by its answers to other requests
      return { kind: 'server', error: new ProviderError(message, { cause: error, status }) };
    }
    const cause = (error as { cause?: unknown }).cause;
    if (isTransientNodeError(error) || isTransientNodeError(cause)) {
      const code = (cause as { code?: string } | undefined)?.code ?? (error as { code?: string }).code;
      return {
        kind: 'transient',
        hostDown: true,
        error: new ProviderError(`Ollama ${maskUrl(host)} unreachable: ${code ?? error.message}`, {
          cause: error,
        }),
      };
    }
    if (error instanceof ProviderError) return { kind: 'transient', error };
    return {
      kind: 'transient',
      error: new ProviderError(`Ollama ${maskUrl(host)}: ${error.message}`, { cause: error }),
    };
  }
}

export function createOllamaEmbedder(options: OllamaEmbedderOptions): OllamaEmbedder {
  return new OllamaEmbedder(options);
}
