/**
 * Scale-out on one machine: throughput of 1, 2 and 4 `cpe worker` processes sharing one MariaDB queue, over the
 * same generated documents with the local embedder (no servers besides MariaDB), and the peak RSS of a worker
 * while 10,000 documents are queued.
 *
 *   npx tsx bench/workers.ts [--docs=600] [--workers=1,2,4] [--queued=10000] [--rss-seconds=60] [--concurrency=2]
 *
 * MariaDB from CPE_TEST_MYSQL_URL (default mysql://root@127.0.0.1:3306); fresh databases per measurement.
 * Throughput = documents / (first document step started .. last document finished), from the rows the workers
 * wrote, so process start-up does not count. Peak RSS = VmHWM of each worker process (Linux /proc).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseSqlTime } from '../src/util/time.js';
import { cliMode, FaultCase, pause, type Worker, writeGeneratedDocuments } from '../test/faults/harness.js';

const arg = (name: string, fallback: string) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;

process.env.CPE_TEST_MYSQL_URL ??= 'mysql://root@127.0.0.1:3306';
const DOCS = Number(arg('docs', '600'));
const WORKERS = arg('workers', '1,2,4').split(',').map(Number);
const QUEUED = Number(arg('queued', '10000'));
const RSS_SECONDS = Number(arg('rss-seconds', '60'));
const CONCURRENCY = arg('concurrency', '2');

/** Peak resident set (VmHWM) and current RSS of a process, in MB; undefined when it is gone. */
function memoryOf(pid: number): { peakMb: number; rssMb: number } | undefined {
  const file = `/proc/${pid}/status`;
  if (!existsSync(file)) return undefined;
  try {
    const text = readFileSync(file, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { peakMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024 };
  } catch {
    return undefined;
  }
}

/** A case over `sourceDir` with the local embedder and the embedded vector index: only MariaDB is a server. */
async function localCase(name: string, sourceDir: string, files: number): Promise<FaultCase> {
  const c = new FaultCase(name, { sourceDir, byPath: new Map(), generated: files, fromCorpus: 0 });
  await c.start();
  for (const key of ['CPE_OLLAMA_HOST', 'CPE_QDRANT_URL', 'CPE_LLM_PROVIDER']) delete c.env[key];
  Object.assign(c.env, { CPE_CONCURRENCY: CONCURRENCY, CPE_LEASE_SECONDS: '60', CPE_LOG_LEVEL: 'warn' });
  return c;
}

async function peakWhileRunning(workers: Worker[], until: () => Promise<boolean>): Promise<number[]> {
  const peaks = workers.map(() => 0);
  for (;;) {
    workers.forEach((w, i) => {
      const memory = memoryOf(w.pid);
      if (memory) peaks[i] = Math.max(peaks[i]!, memory.peakMb);
    });
    if (await until()) return peaks;
    await pause(500);
  }
}

interface ThroughputRow {
  workers: number;
  docs: number;
  seconds: number;
  docsPerSecond: number;
  peakRssMb: number[];
}

async function throughput(workerCount: number, sourceDir: string): Promise<ThroughputRow> {
  const c = await localCase(`${workerCount} workers`, sourceDir, DOCS);
  try {
    // every worker is up and polling before anything is queued, so all of them start on the work together
    const workers = await c.startWorkers(workerCount);
    await c.scan();
    const peaks = await peakWhileRunning(workers, async () => {
      const counts = await c.queueCounts();
      if (counts.failed + counts.dead + counts.retrying > 0)
        throw new Error(`failures: ${JSON.stringify(counts)}`);
      return counts.done >= DOCS;
    });
    await c.stopWorkers();
    const db = c.engine.dbs.content.sql;
    const [span] = await db.query<{ first: string; last: string; n: number }>(
      "SELECT MIN(created_at) AS first, MAX(processed_at) AS last, COUNT(*) AS n FROM documents WHERE status = 'done'",
    );
    const seconds = (parseSqlTime(span!.last)!.getTime() - parseSqlTime(span!.first)!.getTime()) / 1000;
    return {
      workers: workerCount,
      docs: Number(span!.n),
      seconds,
      docsPerSecond: Number(span!.n) / seconds,
      peakRssMb: peaks,
    };
  } finally {
    await c.cleanup();
  }
}

async function rssWithQueue(
  workerCount: number,
): Promise<{ queued: number; processed: number; peakRssMb: number[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-bench-queue-'));
  try {
    writeGeneratedDocuments(dir, QUEUED);
    const c = await localCase(`${QUEUED} queued`, dir, QUEUED);
    try {
      await c.scan();
      const counts = await c.queueCounts();
      const queued = counts.pending;
      const workers = await c.startWorkers(workerCount);
      const deadline = Date.now() + RSS_SECONDS * 1000;
      const peaks = await peakWhileRunning(workers, async () => Date.now() >= deadline);
      const processed = (await c.queueCounts()).done;
      await c.stopWorkers();
      return { queued, processed, peakRssMb: peaks };
    } finally {
      await c.cleanup();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const sourceDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-bench-workers-'));
writeGeneratedDocuments(sourceDir, DOCS);
console.log(
  `cpe workers on one MariaDB: ${DOCS} generated documents, Standard pipeline, local embedder, embedded vectors, ` +
    `concurrency ${CONCURRENCY} per worker, cpe from ${cliMode}; ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(1)}`,
);
const rows: ThroughputRow[] = [];
try {
  for (const n of WORKERS) {
    const row = await throughput(n, sourceDir);
    rows.push(row);
    console.log(
      `${n} worker(s): ${row.docs} documents in ${row.seconds.toFixed(1)} s = ${row.docsPerSecond.toFixed(1)} documents/s; ` +
        `peak RSS per worker ${row.peakRssMb.map((m) => `${m.toFixed(0)} MB`).join(', ')}`,
    );
  }
} finally {
  rmSync(sourceDir, { recursive: true, force: true });
}
const base = rows[0]?.docsPerSecond ?? 1;
console.log('\n| workers | documents/s | speed-up | peak RSS per worker |');
console.log('|---:|---:|---:|---|');
for (const row of rows) {
  console.log(
    `| ${row.workers} | ${row.docsPerSecond.toFixed(1)} | ${(row.docsPerSecond / base).toFixed(2)}x | ${row.peakRssMb.map((m) => `${m.toFixed(0)} MB`).join(', ')} |`,
  );
}
if (QUEUED > 0) {
  const memory = await rssWithQueue(2);
  console.log(
    `\nwith ${memory.queued} documents queued, 2 workers for ${RSS_SECONDS} s (${memory.processed} processed): ` +
      `peak RSS ${memory.peakRssMb.map((m) => `${m.toFixed(0)} MB`).join(', ')} (target < 400 MB)`,
  );
}
