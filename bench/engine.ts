/**
 * Engine overhead: 1,000 generated documents through a pipeline of 5 fixture steps, on SQLite and (when
 * CPE_TEST_MYSQL_URL is set) MariaDB. Two pipelines run in the same process: steps that do nothing (the
 * engine's cost per step execution) and steps that each spin 2 ms of CPU, compared with the same 5,000 calls
 * made in a plain loop (the baseline measured in the same run).
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { planPipeline } from '../src/engine/plan.js';
import { runPipeline } from '../src/engine/runner.js';
import { spin } from '../test/fixtures/plugins/work.js';
import { type Backend, createTestSetup, fixturePlugins } from '../test/helpers/backends.js';
import { generatedDocuments, makeSourceFolder } from '../test/helpers/files.js';
import { insertPipeline } from '../test/helpers/pipelines.js';

export interface EngineBenchRow {
  backend: Backend;
  documents: number;
  steps: number;
  noopWallMs: number;
  overheadPerStepMs: number;
  workWallMs: number;
  baselineMs: number;
  overheadShare: number;
}

async function benchBackend(backend: Backend, documents: number, workMs: number): Promise<EngineBenchRow> {
  const setup = createTestSetup(backend, { plugins: [fixturePlugins] });
  try {
    const engine = await setup.open({ logLevel: 'warn' });
    const db = engine.dbs.content.sql;
    const steps = ['s1', 's2', 's3', 's4', 's5'];
    await insertPipeline(db, 'noop', [
      { name: 'detect', type: 'detect' },
      ...steps.map((name) => ({ name, type: 'work', config: { ms: 0 } })),
    ]);
    await insertPipeline(db, 'work', [
      { name: 'detect', type: 'detect' },
      ...steps.map((name) => ({ name, type: 'work', config: { ms: workMs } })),
    ]);
    const run = async (pipeline: string, prefix: string) => {
      const source = makeSourceFolder(generatedDocuments(documents, prefix));
      const plan = await planPipeline(db, engine.registry, pipeline);
      const started = performance.now();
      const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
      if (summary.docsDone !== documents)
        throw new Error(`${pipeline}: ${summary.docsDone} of ${documents} done`);
      return performance.now() - started;
    };
    const noopWallMs = await run('noop', 'noop');
    const workWallMs = await run('work', 'work');
    const baselineStart = performance.now();
    for (let i = 0; i < documents * steps.length; i++) spin(workMs);
    const baselineMs = performance.now() - baselineStart;
    await engine.close();
    return {
      backend,
      documents,
      steps: steps.length,
      noopWallMs,
      overheadPerStepMs: noopWallMs / (documents * steps.length),
      workWallMs,
      baselineMs,
      overheadShare: (workWallMs - baselineMs) / workWallMs,
    };
  } finally {
    await setup.cleanup();
  }
}

export async function benchEngine(opts: { documents?: number; workMs?: number } = {}) {
  const documents = opts.documents ?? 1000;
  const backends: Backend[] = process.env.CPE_TEST_MYSQL_URL ? ['sqlite', 'mysql'] : ['sqlite'];
  const rows: EngineBenchRow[] = [];
  for (const backend of backends) rows.push(await benchBackend(backend, documents, opts.workMs ?? 2));
  const markdown = [
    '| backend | documents x steps | no-op run (s) | engine overhead per step execution (ms) | 2 ms-work run (s) | same work in a plain loop (s) | overhead share of wall time |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.backend} | ${r.documents} x ${r.steps} | ${(r.noopWallMs / 1000).toFixed(2)} | ${r.overheadPerStepMs.toFixed(3)} | ${(r.workWallMs / 1000).toFixed(2)} | ${(r.baselineMs / 1000).toFixed(2)} | ${(r.overheadShare * 100).toFixed(1)}% |`,
    ),
  ].join('\n');
  return { rows, markdown };
}

if (
  import.meta.url === `file://${process.argv[1]}` ||
  process.argv[1]?.endsWith(path.join('bench', 'engine.ts'))
) {
  const { markdown } = await benchEngine({ documents: Number(process.env.BENCH_DOCUMENTS ?? 1000) });
  process.stdout.write(`${markdown}\n`);
}
