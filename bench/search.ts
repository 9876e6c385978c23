/**
 * Search bench: query latency of the embedded vector index (vectors in SQLite, exact cosine search in process)
 * at 10,000 and 100,000 points of 1024 dimensions. The collection is filled through SqlVectorIndex.upsert (as
 * the pipeline does), then a fresh index object (as a fresh `cpe search` process) loads it; the load is timed
 * on its own, then queries are timed one by one (search + payload fetch of the hits): p50 and p95.
 *
 * Standalone: `npx tsx bench/search.ts [--sizes 10000,100000] [--queries 50] [--limit 10]`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabases } from '../src/db/open.js';
import { chunkPointId } from '../src/vectors/point-id.js';
import { SqlVectorIndex } from '../src/vectors/sql-vector-index.js';

export interface SearchBenchOptions {
  sizes?: number[];
  queries?: number;
  limit?: number;
  dimensions?: number;
}

export interface SearchBenchRow {
  points: number;
  /** first search of a fresh process: reads all vectors from SQLite into the packed matrix */
  loadMs: number;
  p50Ms: number;
  p95Ms: number;
  /** one write after the load (the in-memory matrix is updated, not reloaded), then a query */
  afterWriteMs: number;
}

/** Deterministic pseudo-random unit vectors with some cluster structure (points near one of 64 centres). */
function vectorFactory(dims: number) {
  let state = 987654321;
  const rand = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 0xffffffff - 0.5;
  };
  const centres = Array.from({ length: 64 }, () => Float32Array.from({ length: dims }, rand));
  return () => {
    const centre = centres[Math.floor((rand() + 0.5) * 63.999)];
    return Float32Array.from(centre, (c) => c + rand() * 0.8);
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

export async function benchSearch(
  options: SearchBenchOptions = {},
): Promise<{ rows: SearchBenchRow[]; markdown: string }> {
  const sizes = [...(options.sizes ?? [10_000, 100_000])].sort((a, b) => a - b);
  const queries = options.queries ?? 50;
  const limit = options.limit ?? 10;
  const dims = options.dimensions ?? 1024;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-bench-search-'));
  const dbs = await openDatabases({ dataDir });
  const rows: SearchBenchRow[] = [];
  try {
    const db = dbs.content.sql;
    const writer = new SqlVectorIndex(db);
    await writer.ensureCollection('documents', { size: dims, distance: 'Cosine', model: 'bench' });
    const nextVector = vectorFactory(dims);
    let stored = 0;
    for (const size of sizes) {
      while (stored < size) {
        const batch = Array.from({ length: Math.min(1000, size - stored) }, (_, k) => {
          const i = stored + k;
          const documentId = Math.floor(i / 20) + 1;
          return {
            id: chunkPointId(documentId, i % 20),
            vector: nextVector(),
            payload: { document_id: documentId, chunk_index: i % 20, content: `Chunk ${i}` },
          };
        });
        await writer.upsert('documents', batch);
        stored += batch.length;
      }
      const reader = new SqlVectorIndex(db); // a fresh process: nothing in memory
      const loadStart = performance.now();
      await reader.search('documents', nextVector(), { limit });
      const loadMs = performance.now() - loadStart;
      const times: number[] = [];
      for (let q = 0; q < queries; q++) {
        const query = nextVector();
        const started = performance.now();
        const hits = await reader.search('documents', query, { limit });
        times.push(performance.now() - started);
        if (hits.length !== limit) throw new Error(`expected ${limit} hits, got ${hits.length}`);
      }
      await reader.upsert('documents', [
        { id: chunkPointId(0, 0), vector: nextVector(), payload: { document_id: 0, chunk_index: 0 } },
      ]);
      const afterWrite = performance.now();
      await reader.search('documents', nextVector(), { limit });
      const afterWriteMs = performance.now() - afterWrite;
      await reader.deletePoints('documents', [chunkPointId(0, 0)]);
      times.sort((a, b) => a - b);
      rows.push({
        points: size,
        loadMs: Math.round(loadMs),
        p50Ms: Number(percentile(times, 0.5).toFixed(1)),
        p95Ms: Number(percentile(times, 0.95).toFixed(1)),
        afterWriteMs: Number(afterWriteMs.toFixed(1)),
      });
    }
  } finally {
    await dbs.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const markdown = [
    `Search on the embedded index (SQLite, ${dims}-dim float32 vectors, exact cosine in process), top ${limit}, ${queries} queries per size`,
    '',
    '| points | load (first query of a fresh process) | p50 | p95 | query after a write |',
    '|---|---|---|---|---|',
    ...rows.map(
      (r) => `| ${r.points} | ${r.loadMs} ms | ${r.p50Ms} ms | ${r.p95Ms} ms | ${r.afterWriteMs} ms |`,
    ),
  ].join('\n');
  return { rows, markdown };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  benchSearch({
    sizes: arg('--sizes')?.split(',').map(Number),
    queries: arg('--queries') ? Number(arg('--queries')) : undefined,
    limit: arg('--limit') ? Number(arg('--limit')) : undefined,
  }).then(
    (r) => console.log(r.markdown),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
