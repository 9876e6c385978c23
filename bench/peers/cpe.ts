/**
 * cpe as an ingestion contender: the programmatic API (`open()`), embedded profile (SQLite files, vectors as
 * float32 BLOBs in ki_content, local hashing embedder), the seeded Standard pipeline (detect, extract, chunk,
 * embed, analyze — analyze ends skipped without an LLM), a fresh data folder per child process.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as CpeApi from '../../src/index.js';
import { projectRoot } from '../lib/child.js';
import { timed } from '../lib/timed.js';
import type { IngestArgs, IngestResult } from './types.js';

/**
 * Which cpe is measured: 'dist' is the compiled package users run (`npx cpe`, `import { open } from 'cpe'`),
 * 'src' the TypeScript sources through tsx (slower to start: every module, and every extraction child process,
 * is transpiled on load).
 */
export type CpeBuild = 'dist' | 'src';

export async function loadCpe(build: CpeBuild): Promise<typeof CpeApi> {
  const file = build === 'dist' ? 'dist/src/index.js' : 'src/index.ts';
  return (await import(pathToFileURL(path.join(projectRoot, file)).href)) as typeof CpeApi;
}

const folderBytes = (dir: string): { files: number; bytes: number } => {
  let files = 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.(md|txt)$/i.test(entry.name)) continue;
    files++;
    bytes += statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return { files, bytes };
};

export async function cpeIngest(
  args: IngestArgs & { concurrency?: number; build?: CpeBuild },
): Promise<IngestResult> {
  // a clean environment: nothing of the caller's CPE_* settings (a server URL would switch the profile)
  for (const key of Object.keys(process.env)) if (key.startsWith('CPE_')) delete process.env[key];
  const { open } = await loadCpe(args.build ?? 'dist');
  const cpe = await open({
    flags: { dataDir: path.join(args.workDir, 'data'), logLevel: 'warn' },
    cwd: args.workDir,
  });
  try {
    const runOnce = async () => {
      let documentSteps = 0;
      const { value: summary, ...clock } = await timed(() =>
        cpe.run({
          pipeline: 'Standard',
          source: args.source,
          concurrency: args.concurrency,
          onEvent: (event) => {
            if (event.type === 'step-finished' && event.documentId !== null) documentSteps++;
          },
        }),
      );
      if (summary.status !== 'ok' || summary.docsFailed > 0)
        throw new Error(`cpe run ${summary.status}: ${JSON.stringify(summary.failures.slice(0, 3))}`);
      return { ...clock, summary, documentSteps };
    };
    const first = await runOnce();
    const pass = args.reingest ? await runOnce() : first;
    const db = cpe.engine.dbs.content.sql;
    const [{ n: chunks }] = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM chunks');
    const [{ n: vectors }] = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM vector_points');
    const { files, bytes } = folderBytes(args.source);
    return {
      ms: pass.ms,
      cpuMs: pass.cpuMs,
      mainCpuMs: pass.mainCpuMs,
      documents: args.reingest ? files : pass.summary.docsDone,
      bytes,
      chunks: Number(chunks),
      vectors: Number(vectors),
      ...(args.reingest ? { workDone: pass.documentSteps, workUnit: 'document steps run' } : {}),
      notes: `${pass.summary.docsDone} documents processed, ${pass.summary.stepsOk} steps ok, ${pass.summary.stepsSkipped} skipped`,
    };
  } finally {
    await cpe.close();
  }
}
