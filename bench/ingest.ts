/**
 * End-to-end ingestion (case 2) and unchanged re-ingest (case 3): cpe against LangChain.js and LlamaIndex.TS on
 * the same folder of Markdown and text files, all embedding with the same deterministic embedder (cpe's
 * local-hash-v2, wrapped for the peers in bench/peers/embedders.ts).
 *
 * Every measured pass runs in a child process of its own (fresh data folder for cpe), so each contender's peak
 * RSS is its own; contenders are interleaved (cpe, LangChain, LlamaIndex, cpe, ...) and the tables show medians.
 * cpe runs the Standard pipeline on the embedded profile and persists everything in SQLite (WAL); the peers keep
 * their index in memory. Process start-up and module loading are outside the timed part for everyone.
 *
 * Standalone: `npx tsx bench/ingest.ts` (BENCH_QUICK=1 for a smoke run; see docs/benchmarks.md for the knobs).
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileChildren, ensureBuilt } from './lib/build.js';
import { runInChild } from './lib/child.js';
import { type CorpusFolder, generatedCorpusFolder, realCorpusFolder, tempDir } from './lib/corpus.js';
import { measureParallelism } from './lib/parallelism.js';
import { envNumber, fmt, isQuick, MB, median, ratio, table } from './lib/stats.js';
import type { CpeBuild } from './peers/cpe.js';
import type { IngestResult } from './peers/types.js';

export interface IngestBenchOptions {
  /** interleaved rounds on the real corpus (default 5, quick 1) */
  rounds?: number;
  /** generated corpus sizes for the scaling rows (default 1000 and 5000 documents, quick 200 and 500) */
  scaleDocs?: number[];
  /** interleaved rounds per scaling size (default 3, quick 1) */
  scaleRounds?: number;
  /** which cpe: the compiled package (default) or the TypeScript sources */
  build?: CpeBuild;
  /** leave LlamaIndex out (its pass on the real corpus is ~10x cpe's) */
  skipLlamaIndex?: boolean;
  log?: (line: string) => void;
}

interface Contender {
  name: string;
  module: string;
  fn: string;
  extra?: Record<string, unknown>;
  /** runs in the first rounds only (BENCH_LLAMAINDEX_ROUNDS) */
  maxRounds?: number;
}

interface Measured {
  result: IngestResult;
  maxRssMb: number;
}

const CPE: Contender = { name: 'cpe', module: 'bench/peers/cpe.ts', fn: 'cpeIngest' };
const LANGCHAIN: Contender = {
  name: 'LangChain.js',
  module: 'bench/peers/langchain.ts',
  fn: 'langchainIngest',
};
const LLAMAINDEX: Contender = {
  name: 'LlamaIndex.TS',
  module: 'bench/peers/llamaindex.ts',
  fn: 'llamaindexIngest',
  maxRounds: envNumber('BENCH_LLAMAINDEX_ROUNDS', 3, 1),
};
const READ_HASH: Contender = {
  name: 'read + SHA-256 only',
  module: 'bench/lib/baseline.ts',
  fn: 'readAndHash',
};

async function measure(
  contender: Contender,
  corpus: CorpusFolder,
  reingest: boolean,
  build: CpeBuild,
): Promise<Measured> {
  const workDir = tempDir('work');
  try {
    const { value, maxRssMb } = await runInChild<IngestResult>(contender.module, contender.fn, {
      source: corpus.dir,
      workDir,
      reingest,
      build,
      ...contender.extra,
    });
    return { result: value, maxRssMb };
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

async function interleaved(
  contenders: Contender[],
  corpus: CorpusFolder,
  rounds: number,
  reingest: boolean,
  build: CpeBuild,
  log: (line: string) => void,
): Promise<Map<string, Measured[]>> {
  const out = new Map<string, Measured[]>(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const c of contenders) {
      if (c.maxRounds !== undefined && round >= c.maxRounds) continue;
      const m = await measure(c, corpus, reingest, build);
      out.get(c.name)!.push(m);
      log(
        `  ${reingest ? 're-ingest' : 'ingest'} ${corpus.label} round ${round + 1}/${rounds} ${c.name}: ${fmt(m.result.ms)} ms, ${fmt(m.maxRssMb)} MB RSS`,
      );
    }
  }
  return out;
}

interface Summary {
  ms: number;
  /** median CPU time of the process per pass (every thread) */
  cpuMs: number;
  /** median CPU time of the main thread per pass (Linux), undefined where unknown */
  mainCpuMs?: number;
  docsPerS: number;
  mbPerS: number;
  rssMb: number;
  chunks: number;
  workDone?: number;
  workUnit?: string;
  notes?: string;
  documents: number;
}

function summarize(corpus: CorpusFolder, runs: Measured[]): Summary {
  const ms = median(runs.map((r) => r.result.ms));
  const last = runs[runs.length - 1]!.result;
  return {
    ms,
    cpuMs: median(runs.map((r) => r.result.cpuMs)),
    mainCpuMs: runs.every((r) => r.result.mainCpuMs !== undefined)
      ? median(runs.map((r) => r.result.mainCpuMs!))
      : undefined,
    docsPerS: corpus.files / (ms / 1000),
    mbPerS: corpus.bytes / MB / (ms / 1000),
    rssMb: median(runs.map((r) => r.maxRssMb)),
    chunks: last.chunks,
    workDone: last.workDone,
    workUnit: last.workUnit,
    notes: last.notes,
    documents: last.documents,
  };
}

export async function benchIngest(opts: IngestBenchOptions = {}) {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const rounds = opts.rounds ?? envNumber('BENCH_INGEST_ROUNDS', 5, 1);
  const scaleDocs =
    opts.scaleDocs ??
    (process.env.BENCH_SCALE_DOCS
      ? process.env.BENCH_SCALE_DOCS.split(',').map(Number)
      : isQuick()
        ? [200, 500]
        : [1000, 5000]);
  const scaleRounds = opts.scaleRounds ?? envNumber('BENCH_SCALE_ROUNDS', 3, 1);
  const build = opts.build ?? (process.env.BENCH_CPE_BUILD as CpeBuild | undefined) ?? 'dist';
  const skipLlamaIndex = opts.skipLlamaIndex ?? process.env.BENCH_SKIP_LLAMAINDEX === '1';
  if (build === 'dist') {
    ensureBuilt(log);
    compileChildren(log); // measuring cpe's sources (build 'src') needs tsx in the children instead
  }

  const real = realCorpusFolder();
  const peers = skipLlamaIndex ? [LANGCHAIN] : [LANGCHAIN, LLAMAINDEX];
  const sections: string[] = [];
  const rows: Record<string, unknown>[] = [];
  try {
    // idle child: the RSS every contender starts from
    const idleRss = (await runInChild<unknown>('bench/lib/baseline.ts', 'idle', null)).maxRssMb;

    // case 2: first ingestion of the real corpus, between two readings of how parallel the machine is
    log(`case 2: ingest ${real.label} (${real.files} files, ${fmt(real.bytes / MB)} MB), ${rounds} round(s)`);
    const parallelBefore = await measureParallelism();
    const ingest = await interleaved([CPE, ...peers, READ_HASH], real, rounds, false, build, log);
    const parallelAfter = await measureParallelism();
    rows.push({ case: 'parallelism', before: parallelBefore.speedup, after: parallelAfter.speedup });
    const s = new Map([...ingest].map(([name, runs]) => [name, summarize(real, runs)]));
    const cpe = s.get(CPE.name)!;
    const ingestRows = [CPE, ...peers, READ_HASH].map((c) => {
      const x = s.get(c.name)!;
      rows.push({ case: 'ingest', contender: c.name, ...x });
      const peer = c !== CPE && c !== READ_HASH;
      return [
        c.name,
        fmt(x.docsPerS),
        fmt(x.mbPerS),
        fmt(x.cpuMs / 1000),
        x.mainCpuMs === undefined ? '-' : fmt(x.mainCpuMs / 1000),
        fmt(x.cpuMs / x.ms),
        c === READ_HASH ? '-' : fmt(x.rssMb),
        c === READ_HASH ? '-' : String(x.chunks),
        peer ? ratio(cpe.docsPerS, x.docsPerS) : '-',
        peer ? ratio(x.rssMb, cpe.rssMb) : '-',
      ];
    });
    sections.push(
      [
        `**Case 2 — end-to-end ingestion** of ${real.label}: ${real.files} files, ${fmt(real.bytes / MB)} MB; median of ${rounds} interleaved round(s) (LlamaIndex: ${Math.min(rounds, LLAMAINDEX.maxRounds ?? rounds)}), each pass in its own process (an idle child process is ${fmt(idleRss)} MB RSS).`,
        '',
        table(
          [
            'contender',
            'documents/s',
            'MB/s',
            'CPU per pass (s)',
            'of it main thread (s)',
            'cores busy',
            'peak RSS (MB)',
            'chunks',
            'cpe/peer speed',
            'peer/cpe RSS',
          ],
          ingestRows,
        ),
        '',
        ...[CPE, ...peers].map((c) => `- ${c.name}: ${s.get(c.name)!.notes ?? ''}`),
        "- CPU per pass: user + system time of the whole process in the timed pass (every thread: cpe's embedding threads, V8's compiler and collector); of it main thread: the main thread's time on a core (Linux schedstat), the rest is the other threads'; cores busy = CPU per pass / wall time.",
        `- parallelism of the machine (bench/lib/parallelism.ts): ${parallelBefore.threads} equal pieces of CPU work on ${parallelBefore.threads} threads ran ${fmt(parallelBefore.speedup)}x as fast as one after the other before this case, ${fmt(parallelAfter.speedup)}x after it (${fmt(parallelBefore.threads)} = free cores). cpe spreads its pass over the cores, the peers run on one, so the ratios above move with this figure.`,
      ].join('\n'),
    );

    // scaling: generated corpora of growing size, cpe and LangChain (LlamaIndex would need tens of minutes)
    const scaleRows: string[][] = [];
    for (const docs of scaleDocs) {
      const corpus = generatedCorpusFolder(docs);
      try {
        log(`scaling: ${corpus.label} (${fmt(corpus.bytes / MB)} MB), ${scaleRounds} round(s)`);
        const runs = await interleaved([CPE, LANGCHAIN], corpus, scaleRounds, false, build, log);
        const c = summarize(corpus, runs.get(CPE.name)!);
        const l = summarize(corpus, runs.get(LANGCHAIN.name)!);
        rows.push(
          { case: 'scale', docs, contender: 'cpe', ...c },
          { case: 'scale', docs, contender: 'LangChain.js', ...l },
        );
        scaleRows.push([
          `${docs} documents, ${fmt(corpus.bytes / MB)} MB`,
          fmt(c.docsPerS),
          fmt(c.mbPerS),
          fmt(c.rssMb),
          fmt(l.docsPerS),
          fmt(l.mbPerS),
          fmt(l.rssMb),
          ratio(c.docsPerS, l.docsPerS),
        ]);
      } finally {
        rmSync(corpus.dir, { recursive: true, force: true });
      }
    }
    sections.push(
      [
        `**Case 2b — scaling**: generated German Markdown (4-12 KB per document), ${scaleRounds} interleaved round(s) per size (medians); peak RSS should stay flat as the corpus grows.`,
        '',
        table(
          [
            'corpus',
            'cpe documents/s',
            'cpe MB/s',
            'cpe peak RSS (MB)',
            'LangChain documents/s',
            'LangChain MB/s',
            'LangChain peak RSS (MB)',
            'cpe/LangChain speed',
          ],
          scaleRows,
        ),
      ].join('\n'),
    );

    // case 3: unchanged re-ingest (the first pass in the same process, untimed)
    log(`case 3: re-ingest ${real.label}, ${rounds} round(s)`);
    const again = await interleaved([CPE, ...peers], real, rounds, true, build, log);
    const r = new Map([...again].map(([name, runs]) => [name, summarize(real, runs)]));
    const cpeAgain = r.get(CPE.name)!;
    sections.push(
      [
        `**Case 3 — re-ingesting the unchanged folder** (${real.files} files): the second pass after a full first pass in the same process; median of ${rounds} round(s) (LlamaIndex: ${Math.min(rounds, LLAMAINDEX.maxRounds ?? rounds)}).`,
        '',
        table(
          ['contender', 'time (ms)', 'work done in the second pass', 'peer time / cpe time'],
          [CPE, ...peers].map((c) => {
            const x = r.get(c.name)!;
            rows.push({ case: 'reingest', contender: c.name, ...x });
            return [
              c.name,
              fmt(x.ms),
              `${x.workDone ?? 0} ${x.workUnit ?? ''}`,
              c === CPE ? '-' : ratio(x.ms, cpeAgain.ms),
            ];
          }),
        ),
      ].join('\n'),
    );
  } finally {
    rmSync(real.dir, { recursive: true, force: true });
  }
  return { rows, markdown: sections.join('\n\n') };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  benchIngest().then(
    (r) => console.log(r.markdown),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
