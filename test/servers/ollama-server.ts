import { createHash } from 'node:crypto';
import { type StartedServer, TestHttpServer } from './test-http-server.js';

/**
 * A fake Ollama speaking POST /api/embed as the `ollama` client sees it: {model, input} -> {model, embeddings}.
 * Vectors are derived from the input text (deterministic), so the same text always gets the same vector.
 * Extra routes (e.g. /api/chat) are registered with `route()`.
 */
export interface OllamaServerOptions {
  /** vector size (default 1024) */
  dimensions?: number;
  /** the vector of a text; default: a pseudo-random unit vector seeded by the text's SHA-256 */
  vectorize?: (text: string, dimensions: number) => ArrayLike<number>;
  /** models it knows; others get 404 like a model that was never pulled (default: any model) */
  models?: string[];
  /**
   * A cost model for benchmarks: each request holds one of `maxConcurrent` compute slots for
   * perRequestMs + perInputMs * inputs, queued behind the slot's earlier requests.
   */
  cost?: { perRequestMs: number; perInputMs: number; maxConcurrent: number };
}

/** Deterministic pseudo-random unit vector from a text (xorshift32 seeded with the text's SHA-256). */
export function hashedVector(text: string, dimensions: number): Float32Array {
  const seed = createHash('sha256').update(text).digest();
  let state = seed.readUInt32LE(0) || 1;
  const out = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const value = ((state >>> 0) / 0xffffffff) * 2 - 1;
    out[i] = value;
    norm += value * value;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  for (let i = 0; i < dimensions; i++) out[i] *= scale;
  return out;
}

export class OllamaTestServer extends TestHttpServer {
  dimensions: number;
  /** inputs containing this text make the request fail with `badInputStatus` (a server that chokes on one input) */
  badInput: string | undefined;
  badInputStatus = 500;
  /** inputs embedded, requests answered with vectors, and the most requests seen in flight at once */
  readonly stats = { inputs: 0, embedRequests: 0, maxInFlight: 0, busyMs: 0 };
  /** requests per batch size seen */
  readonly batchSizes: number[] = [];
  private inFlight = 0;
  /** when each compute slot is free again (performance.now() milliseconds) */
  private slotFreeAt: number[] = [];

  constructor(private readonly options: OllamaServerOptions = {}) {
    super((message) => ({ error: message }));
    this.dimensions = options.dimensions ?? 1024;
    this.route('GET', '/', () => ({ body: 'Ollama is running' }));
    this.route('GET', '/api/version', () => ({ body: { version: '0.6.4-test' } }));
    this.route('POST', '/api/embed', (request) => this.embed(request.body, () => request.aborted));
  }

  /**
   * Holds a compute slot for `ms`: the one free first, from when it is free (or now) on its own clock, and
   * resolves when that time has come. The slots model the server's model runner, which keeps computing while
   * its HTTP side reads and parses further requests: a slot follows its schedule instead of waiting for this
   * thread's timers (on a busy 2-core machine, parsing a large request body held each hand-over back by 5-10 ms,
   * idling the slots ~8% of a run).
   */
  private async holdSlot(maxConcurrent: number, ms: number, aborted: () => boolean): Promise<void> {
    if (this.slotFreeAt.length !== maxConcurrent) this.slotFreeAt = new Array(maxConcurrent).fill(0);
    let slot = 0;
    for (let i = 1; i < maxConcurrent; i++) if (this.slotFreeAt[i]! < this.slotFreeAt[slot]!) slot = i;
    const end = Math.max(performance.now(), this.slotFreeAt[slot]!) + ms;
    this.slotFreeAt[slot] = end;
    this.stats.busyMs += ms;
    const wait = end - performance.now();
    if (wait > 0 && !aborted()) await new Promise((resolve) => setTimeout(resolve, wait));
  }

  private async embed(body: any, aborted: () => boolean) {
    const model = body?.model;
    if (typeof model !== 'string' || model === '')
      return { status: 400, body: { error: 'model is required' } };
    if (
      this.options.models &&
      !this.options.models.includes(model) &&
      !this.options.models.includes(model.replace(/:latest$/, ''))
    ) {
      return { status: 404, body: { error: `model "${model}" not found, try pulling it first` } };
    }
    const input: string[] = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || input.some((t) => typeof t !== 'string')) {
      return { status: 400, body: { error: 'input must be a string or a list of strings' } };
    }
    this.inFlight++;
    this.stats.maxInFlight = Math.max(this.stats.maxInFlight, this.inFlight);
    try {
      if (this.badInput !== undefined && input.some((t) => t.includes(this.badInput!))) {
        return { status: this.badInputStatus, body: { error: 'failed to embed: the model produced NaN' } };
      }
      const cost = this.options.cost;
      if (cost)
        await this.holdSlot(cost.maxConcurrent, cost.perRequestMs + cost.perInputMs * input.length, aborted);
      const vectorize = this.options.vectorize ?? hashedVector;
      const embeddings = input.map((text) => Array.from(vectorize(text, this.dimensions)));
      this.stats.inputs += input.length;
      this.stats.embedRequests++;
      this.batchSizes.push(input.length);
      return {
        body: { model, embeddings, total_duration: 1, load_duration: 0, prompt_eval_count: input.length },
      };
    } finally {
      this.inFlight--;
    }
  }
}

/** Starts a fake Ollama on 127.0.0.1 (random port). */
export async function startOllamaServer(
  options: OllamaServerOptions = {},
): Promise<StartedServer & { server: OllamaTestServer }> {
  const server = new OllamaTestServer(options);
  const started = await server.start();
  return { ...started, server };
}
