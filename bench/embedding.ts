/**
 * Embedding bench: cpe's Ollama embedder (DEFAULT settings) against LangChain's OllamaEmbeddings
 * (@langchain/ollama) with its default settings and hand-tuned (batches of 256, 4 in flight), all through the
 * same fake Ollama (test/servers/ollama-server.ts) that has a fixed cost: each request holds one of 4 slots for
 * 5 ms + 0.2 ms per input, further requests queue. Throughput is shown as a share of the server's maximum: the
 * rate if all 4 slots were busy all the time with one request each (N inputs in (N * 0.2 + 4 * 5) / 4 ms).
 * Runs are interleaved (cpe, LangChain default, LangChain tuned, cpe, ...) and the table shows medians.
 *
 * The vectors are small (16 dimensions by default) so that the figure measures how the client schedules
 * requests against the server's cost, not JSON encoding: 20,000 vectors of 1024 floats are ~400 MB of JSON,
 * which would dominate every contender alike. `--dims 1024` measures that too.
 *
 * The fake server runs in a worker thread, so that its own work (reading requests, making vectors) does not
 * share an event loop with the clients being measured, as a real Ollama would not.
 *
 * Standalone: `npx tsx bench/embedding.ts [--chunks 20000] [--rounds 3] [--dims 16] [--per-request-ms 5]
 * [--per-input-ms 0.2] [--batch N --concurrency N]`
 * (--batch/--concurrency override cpe's defaults, for experiments).
 */
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { OllamaEmbeddings } from '@langchain/ollama';
import { createOllamaEmbedder, OLLAMA_DEFAULTS } from '../src/embed/ollama.js';
import { OllamaTestServer } from '../test/servers/ollama-server.js';

export interface EmbeddingBenchOptions {
  chunks?: number;
  rounds?: number;
  dimensions?: number;
  perRequestMs?: number;
  perInputMs?: number;
  maxConcurrent?: number;
  /** override cpe's settings (the default run uses none: DEFAULT settings) */
  cpe?: { batchSize?: number; concurrency?: number };
}

export interface EmbeddingBenchRow {
  contender: string;
  settings: string;
  medianMs: number;
  chunksPerSecond: number;
  /** achieved throughput / the server's maximum */
  shareOfServerMax: number;
  requests: number;
  /** the fewest and most inputs in one request (over all rounds) */
  inputsPerRequest: [number, number];
  /** share of the server's maximum in each round, in the order run */
  roundShares: number[];
  /** share of the run during which the server's slots were working */
  serverBusy: number;
}

const WORDS = (
  'Ausbildung Betrieb Prüfung Arbeitsschutz Gefährdungsbeurteilung Unterweisung Qualitätssicherung Dokumentation ' +
  'Verantwortung Auszubildende Ausbilderin Lernziel Berichtsheft Sicherheit Maschine Wartung Kunde Auftrag ' +
  'Rechnung Lager Wareneingang Reklamation Frist Vertrag Urlaub Arbeitszeit Schicht Pause Vorgesetzte Team'
).split(' ');
const GLUE = 'der die das und mit für bei nach gemäß wird werden ist sind im am zum zur'.split(' ');

/** Deterministic German-looking chunks of 500-800 characters. */
export function benchChunks(n: number): string[] {
  const out: string[] = [];
  let state = 12345;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state;
  };
  for (let i = 0; i < n; i++) {
    const target = 500 + (next() % 300);
    let text = `Abschnitt ${i}:`;
    while (text.length < target) {
      text += ` ${GLUE[next() % GLUE.length]} ${WORDS[next() % WORDS.length]}`;
      if (next() % 9 === 0) text += '.';
    }
    out.push(text.slice(0, target));
  }
  return out;
}

const WORKER_ROLE = 'cpe-bench-ollama-server';

interface ServerHandle {
  url: string;
  /** embed requests answered since the last call, and how long the server's slots were busy */
  takeStats(): Promise<{ requests: number; busyMs: number; smallest: number; largest: number }>;
  close(): Promise<void>;
}

/**
 * The bench server's vectors: deterministic per text like the test server's default, but from a 32-bit FNV
 * hash instead of SHA-256 and with 6 significant digits, so that the fake server's own CPU (on a shared
 * 2-core machine) stays small next to the cost it simulates.
 */
function cheapVector(text: string, dims: number): number[] {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  let state = h >>> 0 || 1;
  const out: number[] = new Array(dims);
  for (let i = 0; i < dims; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = Math.round(((state >>> 0) / 0xffffffff - 0.5) * 1e6) / 1e6;
  }
  return out;
}

/** Worker side: the fake Ollama, answering stats queries from the main thread. */
async function serveInWorker(): Promise<void> {
  const { dims, cost } = workerData as {
    dims: number;
    cost: { perRequestMs: number; perInputMs: number; maxConcurrent: number };
  };
  const server = new OllamaTestServer({ dimensions: dims, cost, vectorize: cheapVector });
  const { url, close } = await server.start();
  parentPort!.on('message', async (message: string) => {
    if (message === 'stats') {
      const sizes = server.batchSizes;
      parentPort!.postMessage({
        requests: server.stats.embedRequests,
        busyMs: server.stats.busyMs,
        smallest: sizes.length ? Math.min(...sizes) : 0,
        largest: sizes.length ? Math.max(...sizes) : 0,
      });
      server.stats.embedRequests = 0;
      server.stats.busyMs = 0;
      sizes.length = 0;
    } else if (message === 'close') {
      await close();
      parentPort!.postMessage({ closed: true });
    }
  });
  parentPort!.postMessage({ url });
}

/** Starts the fake Ollama in a worker thread (TypeScript through tsx's register API, as under `npx tsx`). */
async function startServerWorker(dims: number, cost: object): Promise<ServerHandle> {
  const self = import.meta.url;
  const code = self.endsWith('.ts')
    ? `(async () => { const { register } = await import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}); register(); await import(${JSON.stringify(self)}); })()`
    : `import(${JSON.stringify(self)})`;
  const worker = new Worker(code, { eval: true, workerData: { role: WORKER_ROLE, dims, cost } });
  // one listener each; answers come back in the order of the messages sent
  const waiting: Array<{ resolve: (value: any) => void; reject: (error: Error) => void }> = [];
  let failure: Error | undefined;
  const failAll = (error: Error) => {
    failure = error;
    for (const w of waiting.splice(0)) w.reject(error);
  };
  worker.on('message', (message) => waiting.shift()?.resolve(message));
  worker.on('error', failAll);
  worker.on('exit', () => failAll(failure ?? new Error('the fake Ollama worker exited')));
  const next = () =>
    new Promise<any>((resolve, reject) => {
      if (failure) return reject(failure);
      waiting.push({ resolve, reject });
    });
  const { url } = await next();
  return {
    url,
    async takeStats() {
      worker.postMessage('stats');
      return next();
    },
    async close() {
      worker.postMessage('close');
      await next();
      await worker.terminate();
    },
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export async function benchEmbedding(
  options: EmbeddingBenchOptions = {},
): Promise<{ rows: EmbeddingBenchRow[]; markdown: string }> {
  const n = options.chunks ?? 20_000;
  const rounds = options.rounds ?? 3;
  const dims = options.dimensions ?? 16;
  const cost = {
    perRequestMs: options.perRequestMs ?? 5,
    perInputMs: options.perInputMs ?? 0.2,
    maxConcurrent: options.maxConcurrent ?? 4,
  };
  const texts = benchChunks(n);
  const server = await startServerWorker(dims, cost);
  const url = server.url;
  const model = 'mxbai-embed-large';
  const serverMaxMs = (n * cost.perInputMs + cost.maxConcurrent * cost.perRequestMs) / cost.maxConcurrent;

  const contenders: Array<{ name: string; settings: string; run: (input: string[]) => Promise<number> }> = [
    {
      name: 'cpe',
      settings: options.cpe
        ? `batch ${options.cpe.batchSize ?? OLLAMA_DEFAULTS.batchSize}, ${options.cpe.concurrency ?? OLLAMA_DEFAULTS.concurrency} in flight per host`
        : `defaults (batch ${OLLAMA_DEFAULTS.batchSize}, ${OLLAMA_DEFAULTS.concurrency} in flight per host)`,
      run: async () =>
        (await createOllamaEmbedder({ hosts: [url], model, dimensions: dims, ...options.cpe }).embed(texts))
          .length,
    },
    {
      name: 'LangChain OllamaEmbeddings',
      settings: 'defaults (embedDocuments on all chunks)',
      run: async (input) =>
        (await new OllamaEmbeddings({ baseUrl: url, model }).embedDocuments(input)).length,
    },
    {
      name: 'LangChain OllamaEmbeddings',
      settings: 'hand-tuned: batches of 256, maxConcurrency 4',
      run: async (input) => {
        const embeddings = new OllamaEmbeddings({ baseUrl: url, model, maxConcurrency: 4 });
        const batches: string[][] = [];
        for (let i = 0; i < input.length; i += 256) batches.push(input.slice(i, i + 256));
        const results = await Promise.all(batches.map((b) => embeddings.embedDocuments(b)));
        return results.reduce((s, r) => s + r.length, 0);
      },
    },
  ];

  const times = contenders.map(() => [] as number[]);
  const requests = contenders.map(() => [] as number[]);
  const busy = contenders.map(() => [] as number[]);
  const sizes = contenders.map(() => [Number.POSITIVE_INFINITY, 0] as [number, number]);
  const load = loadavg()[0];
  try {
    // warm-up (not timed): JIT, connection pools
    for (const contender of contenders) await contender.run(texts.slice(0, 1024));
    for (let round = 0; round < rounds; round++) {
      for (const [k, contender] of contenders.entries()) {
        await server.takeStats();
        const started = performance.now();
        const count = await contender.run(texts);
        const ms = performance.now() - started;
        times[k].push(ms);
        const stats = await server.takeStats();
        requests[k].push(stats.requests);
        busy[k].push(stats.busyMs / (cost.maxConcurrent * ms));
        sizes[k] = [Math.min(sizes[k][0], stats.smallest), Math.max(sizes[k][1], stats.largest)];
        if (count !== n) throw new Error(`${contender.name}: ${count} vectors for ${n} chunks`);
      }
    }
  } finally {
    await server.close();
  }

  const rows: EmbeddingBenchRow[] = contenders.map((c, k) => {
    const ms = median(times[k]);
    return {
      contender: c.name,
      settings: c.settings,
      medianMs: Math.round(ms),
      chunksPerSecond: Math.round((n / ms) * 1000),
      shareOfServerMax: serverMaxMs / ms,
      requests: median(requests[k]),
      inputsPerRequest: sizes[k],
      roundShares: times[k].map((t) => serverMaxMs / t),
      serverBusy: median(busy[k]),
    };
  });
  const header =
    `Embedding: ${n} chunks (500-800 chars), ${dims}-dim vectors, fake Ollama costing ${cost.perRequestMs} ms per request ` +
    `+ ${cost.perInputMs} ms per input with ${cost.maxConcurrent} requests at once (server maximum ` +
    `${Math.round((n / serverMaxMs) * 1000)} chunks/s), ${rounds} interleaved rounds, medians; load average ${load.toFixed(1)} at the start (${loadavg()[0].toFixed(1)} at the end)`;
  const markdown = [
    header,
    '',
    '| contender | settings | median time | chunks/s | share of server max | per round | requests | inputs per request | server slots busy |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.contender} | ${r.settings} | ${r.medianMs} ms | ${r.chunksPerSecond} | ${(r.shareOfServerMax * 100).toFixed(1)}% | ${r.roundShares.map((x) => `${(x * 100).toFixed(0)}%`).join(' ')} | ${r.requests} | ${r.inputsPerRequest[0] === r.inputsPerRequest[1] ? r.inputsPerRequest[0] : r.inputsPerRequest.join('-')} | ${(r.serverBusy * 100).toFixed(0)}% |`,
    ),
  ].join('\n');
  return { rows, markdown };
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === WORKER_ROLE) {
  void serveInWorker();
} else if (
  isMainThread &&
  process.argv[1] &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? Number(process.argv[i + 1]) : undefined;
  };
  const batchSize = arg('--batch');
  const concurrency = arg('--concurrency');
  benchEmbedding({
    chunks: arg('--chunks'),
    rounds: arg('--rounds'),
    dimensions: arg('--dims'),
    perRequestMs: arg('--per-request-ms'),
    perInputMs: arg('--per-input-ms'),
    cpe: batchSize || concurrency ? { batchSize, concurrency } : undefined,
  }).then(
    (r) => console.log(r.markdown),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
