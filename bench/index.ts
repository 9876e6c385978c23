/**
 * `npm run bench`: every benchmark, cpe side by side with what users would pick instead, measured in the same
 * run (interleaved rounds, medians, ratios). Prints a Markdown report; with `--write` (or BENCH_WRITE=1) the
 * report also replaces the results block of docs/benchmarks.md.
 *
 *   1 chunking            bench/chunking.ts (cpe vs LangChain, full quality) + bench/chunking-peers.ts (+ LlamaIndex)
 *   2 ingestion           bench/ingest.ts (cpe vs LangChain.js vs LlamaIndex.TS, plus scaling)
 *   3 re-ingest           bench/ingest.ts
 *   4 embedding           bench/embedding.ts (test Ollama server with a fixed cost model)
 *   5 engine overhead     bench/engine.ts (SQLite; MariaDB with CPE_TEST_MYSQL_URL)
 *   + bulk writes         bench/bulk-writes.ts (cpe's write paths vs the raw driver)
 *   + search              bench/search.ts (embedded index query latency)
 *
 * BENCH_QUICK=1 runs small sizes (a smoke run of a few minutes); BENCH_ONLY=ingest,chunking,... picks cases.
 */
import { execSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { benchBulkWrites } from './bulk-writes.js';
import { benchChunking } from './chunking.js';
import { benchChunkingPeers } from './chunking-peers.js';
import { benchEmbedding } from './embedding.js';
import { benchEngine } from './engine.js';
import { benchIngest } from './ingest.js';
import { projectRoot } from './lib/child.js';
import { fmt, isQuick, pct, table } from './lib/stats.js';
import { benchSearch } from './search.js';

const log = (line: string) => process.stderr.write(`${line}\n`);

function versionOf(pkg: string): string {
  try {
    return JSON.parse(readFileSync(path.join(projectRoot, 'node_modules', pkg, 'package.json'), 'utf8'))
      .version;
  } catch {
    return 'not installed';
  }
}

function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const packages = [
    '@langchain/core',
    '@langchain/textsplitters',
    '@langchain/classic',
    '@langchain/ollama',
    'llamaindex',
    '@llamaindex/core',
    '@llamaindex/readers',
    'better-sqlite3',
    'mysql2',
    'typeorm',
  ];
  let commit = 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { cwd: projectRoot, encoding: 'utf8' }).trim();
  } catch {
    // not a git checkout
  }
  return [
    `- date: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, cpe ${versionOf('../')} at commit ${commit} (plus the working tree)`,
    `- machine: ${os.availableParallelism()} cores (${cpu}), ${fmt(os.totalmem() / 1024 ** 3)} GB memory, ${os.type()} ${os.release()}, load average at start ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' / ')}`,
    `- Node ${process.version}; ${packages.map((p) => `${p} ${versionOf(p)}`).join(', ')}`,
    `- command: \`${isQuick() ? 'BENCH_QUICK=1 ' : ''}${process.env.CPE_TEST_MYSQL_URL ? 'CPE_TEST_MYSQL_URL=mysql://... ' : ''}npm run bench\``,
  ].join('\n');
}

interface Verdict {
  target: string;
  measured: string;
  met: boolean | undefined;
}

const yes = (met: boolean | undefined) => (met === undefined ? 'not measured' : met ? 'met' : 'MISSED');

export async function runAll(): Promise<string> {
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
  const wanted = (name: string) => !only || only.includes(name);
  const quick = isQuick();
  const sections: string[] = [];
  const verdicts: Verdict[] = [];
  const timings: string[] = [];

  const step = async (name: string, fn: () => Promise<void>) => {
    if (!wanted(name)) return;
    log(`== ${name}`);
    const started = performance.now();
    try {
      await fn();
    } catch (error) {
      log(`${name} failed: ${error instanceof Error ? error.stack : String(error)}`);
      sections.push(`**${name}**: failed — ${error instanceof Error ? error.message : String(error)}`);
    }
    timings.push(`${name} ${fmt((performance.now() - started) / 1000)} s`);
  };

  await step('chunking', async () => {
    const full = await benchChunking({ rounds: quick ? 2 : 7 });
    sections.push(`**Case 1 — chunking, cpe vs LangChain** (bench/chunking.ts)\n\n${full.markdown}`);
    const speed = full.rows.find((r) => String(r.metric).startsWith('speed ratio'));
    const ends = full.rows.find((r) => String(r.metric).startsWith('ends at sentence'));
    if (speed) {
      const x = Number(speed.cpe);
      verdicts.push({
        target:
          'chunking: >= 1x LangChain RecursiveCharacterTextSplitter (target 2x), boundary quality (>= 98% end at sentence/paragraph)',
        measured: `${fmt(x)}x; ends at sentence/paragraph ${ends?.cpe ?? 'n/a'}`,
        met: x >= 1 && (!ends || Number.parseFloat(String(ends.cpe)) >= 98),
      });
    }
    const peers = await benchChunkingPeers();
    sections.push(peers.markdown);
  });

  await step('ingest', async () => {
    const result = await benchIngest({ log });
    sections.push(result.markdown);
    const get = (kase: string, contender: string, docs?: number) =>
      result.rows.find(
        (r) => r.case === kase && r.contender === contender && (docs === undefined || r.docs === docs),
      ) as { docsPerS: number; mbPerS: number; rssMb: number; ms: number; workDone?: number } | undefined;
    const cpe = get('ingest', 'cpe');
    const lc = get('ingest', 'LangChain.js');
    const li = get('ingest', 'LlamaIndex.TS');
    if (cpe && lc) {
      verdicts.push({
        target: 'ingestion: >= 1x LangChain.js documents/s and MB/s (target 2x)',
        measured: `${fmt(cpe.docsPerS / lc.docsPerS)}x documents/s, ${fmt(cpe.mbPerS / lc.mbPerS)}x MB/s`,
        met: cpe.docsPerS >= lc.docsPerS && cpe.mbPerS >= lc.mbPerS,
      });
      verdicts.push({
        target: 'ingestion: peak RSS no higher than LangChain.js',
        measured: `${fmt(cpe.rssMb)} MB vs ${fmt(lc.rssMb)} MB`,
        met: cpe.rssMb <= lc.rssMb,
      });
    }
    if (cpe && li) {
      verdicts.push({
        target: 'ingestion: >= 10x LlamaIndex.TS',
        measured: `${fmt(cpe.docsPerS / li.docsPerS)}x documents/s`,
        met: cpe.docsPerS >= 10 * li.docsPerS,
      });
    }
    const scale = result.rows.filter((r) => r.case === 'scale' && r.contender === 'cpe') as unknown as Array<{
      docs: number;
      rssMb: number;
    }>;
    if (scale.length >= 2) {
      const first = scale[0]!;
      const last = scale[scale.length - 1]!;
      verdicts.push({
        target: 'ingestion: peak RSS flat as the corpus grows',
        measured: `${fmt(first.rssMb)} MB at ${first.docs} documents, ${fmt(last.rssMb)} MB at ${last.docs}`,
        met: last.rssMb <= first.rssMb * 1.25,
      });
    }
    const again = get('reingest', 'cpe');
    const peerTimes = ['LangChain.js', 'LlamaIndex.TS']
      .map((p) => get('reingest', p)?.ms)
      .filter((x): x is number => x !== undefined);
    if (again && peerTimes.length) {
      const fastest = Math.min(...peerTimes);
      verdicts.push({
        target: 'unchanged re-ingest: >= 20x faster than the fastest peer, no step work',
        measured: `${fmt(fastest / again.ms)}x (${fmt(again.ms)} ms vs ${fmt(fastest)} ms), ${again.workDone ?? 0} document steps run`,
        met: fastest / again.ms >= 20 && (again.workDone ?? 0) === 0,
      });
    }
  });

  await step('embedding', async () => {
    const result = await benchEmbedding({ chunks: quick ? 5000 : 20_000, rounds: quick ? 2 : 3 });
    sections.push(
      `**Case 4 — embedding through a test Ollama server** (bench/embedding.ts)\n\n${result.markdown}`,
    );
    const cpe = result.rows.find((r) => r.contender === 'cpe');
    const lcDefault = result.rows.find(
      (r) => r.contender.startsWith('LangChain') && r.settings.startsWith('defaults'),
    );
    if (cpe && lcDefault) {
      verdicts.push({
        target: 'embedding with default settings: >= 90% of the server maximum, >= 2x LangChain default',
        measured: `${pct(cpe.shareOfServerMax)} of the maximum, ${fmt(cpe.shareOfServerMax / lcDefault.shareOfServerMax)}x LangChain default (${pct(lcDefault.shareOfServerMax)})`,
        met: cpe.shareOfServerMax >= 0.9 && cpe.shareOfServerMax >= 2 * lcDefault.shareOfServerMax,
      });
    }
  });

  await step('engine', async () => {
    const result = await benchEngine({ documents: quick ? 200 : 1000 });
    sections.push(`**Case 5 — engine overhead** (bench/engine.ts)\n\n${result.markdown}`);
  });

  await step('bulk-writes', async () => {
    const result = await benchBulkWrites();
    sections.push(result.markdown);
    for (const r of result.rows) {
      verdicts.push({
        target: `bulk writes (${r.backend} ${r.kind}): >= 0.8x the raw driver's rows/s`,
        measured: `${fmt(r.cpeRowsPerS / r.rawRowsPerS)}x (${fmt(r.cpeRowsPerS)} vs ${fmt(r.rawRowsPerS)} rows/s)`,
        met: r.cpeRowsPerS >= 0.8 * r.rawRowsPerS,
      });
    }
  });

  await step('search', async () => {
    const result = await benchSearch({ sizes: quick ? [10_000] : [10_000, 100_000] });
    sections.push(`**Search latency of the embedded index** (bench/search.ts)\n\n${result.markdown}`);
  });

  const report = [
    machine(),
    '',
    table(
      ['target', 'measured', 'verdict'],
      verdicts.map((v) => [v.target, v.measured, yes(v.met)]),
    ),
    '',
    ...sections.flatMap((s) => [s, '']),
    `Wall time per case: ${timings.join(', ')}.`,
  ].join('\n');
  return report;
}

const BEGIN = '<!-- bench:results:begin -->';
const END = '<!-- bench:results:end -->';

/** Replaces the generated block of docs/benchmarks.md with the report. */
function writeDocs(report: string): void {
  const file = path.join(projectRoot, 'docs/benchmarks.md');
  const doc = readFileSync(file, 'utf8');
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${file} has no ${BEGIN} ... ${END} block`);
  writeFileSync(file, `${doc.slice(0, start + BEGIN.length)}\n${report}\n${doc.slice(end)}`);
  log(`wrote the results into ${path.relative(process.cwd(), file)}`);
}

const report = await runAll();
process.stdout.write(`${report}\n`);
if (process.argv.includes('--write') || process.env.BENCH_WRITE === '1') writeDocs(report);
