import { profileKeysOf, stepsToRun } from '../engine/checkpoints.js';
import type { Engine } from '../engine/engine.js';
import type { Plan } from '../engine/plan.js';
import { scanSource, storedSourceRoot } from '../engine/scan.js';
import { extractIsolated } from '../extract/isolate.js';
import type { Estimate, LlmStepPlugin } from '../knowledge/estimate.js';
import { chunkConfigFromJson, chunkDocument } from '../text/chunk.js';
import { printable } from '../util/printable.js';
import { formatTable } from './table.js';

interface DryRunFile {
  path: string;
  decision: string;
  steps: string[];
}

interface StepEstimate extends Estimate {
  step: string;
  documents: number;
}

/** Chunk token counts of a file as the plan's chunk step would make them: stored ones, else an in-memory pass. */
async function chunkTokens(engine: Engine, plan: Plan, file: DryRunFile & { documentId: number | null }) {
  const db = engine.dbs.content.sql;
  if (file.documentId !== null && file.decision === 'unchanged') {
    const rows = await db.query<{ token_count: number }>(
      'SELECT token_count FROM chunks WHERE document_id = ?',
      [file.documentId],
    );
    const [pages] = await db.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM document_pages WHERE document_id = ?',
      [file.documentId],
    );
    if (rows.length)
      return {
        chunks: rows.map((r) => ({ tokenCount: Number(r.token_count) })),
        pages: Number(pages?.n ?? 1),
      };
  }
  const chunkStep = plan.steps.find((s) => s.type === 'chunk');
  const doc = await extractIsolated(file.path);
  const chunks = chunkDocument(doc, {
    config: chunkConfigFromJson((chunkStep?.config ?? {}) as Record<string, unknown>),
  });
  return { chunks, pages: doc.pages.length };
}

/** Per LLM step: the calls and tokens a run would need (first run: no cache hits, no repairs). */
async function estimateLlm(
  engine: Engine,
  plan: Plan,
  files: Array<DryRunFile & { documentId: number | null }>,
) {
  const llmSteps = plan.steps.filter(
    (s) => typeof (s.plugin as Partial<LlmStepPlugin>).estimate === 'function',
  );
  const totals = new Map<string, StepEstimate>(
    llmSteps.map((s) => [s.name, { step: s.name, documents: 0, calls: 0, tokensIn: 0, tokensOut: 0 }]),
  );
  const problems: string[] = [];
  for (const file of files) {
    const needed = llmSteps.filter((s) => file.steps.includes(s.name));
    if (!needed.length) continue;
    let input: { chunks: Array<{ tokenCount: number }>; pages: number };
    try {
      input = await chunkTokens(engine, plan, file);
    } catch (error) {
      problems.push(`${printable(file.path)}: ${(error as Error).message}`);
      continue;
    }
    for (const step of needed) {
      const estimate = (step.plugin as LlmStepPlugin).estimate({
        config: step.config as Record<string, unknown>,
        ...input,
      });
      const total = totals.get(step.name)!;
      total.documents++;
      total.calls += estimate.calls;
      total.tokensIn += estimate.tokensIn;
      total.tokensOut += estimate.tokensOut;
    }
  }
  return { steps: [...totals.values()], problems };
}

/** What the run would be asked for besides the dry run: `--force` and `--rehash` change what it does. */
export interface DryRunOptions {
  json: boolean;
  /** every step of every document again, as `run --force` does (it reads every file too) */
  force: boolean;
  /** every file read and hashed, also one whose stat signature is unchanged */
  rehash: boolean;
}

/** `--dry-run`: what a run would do per file, from a scan that writes nothing. */
export async function printDryRun(
  engine: Engine,
  plan: Plan,
  sourceDir: string | undefined,
  { json, force, rehash }: DryRunOptions,
): Promise<void> {
  const db = engine.dbs.content.sql;
  const documentSteps = plan.steps.filter((s) => s.phase === 'document');
  const files: Array<DryRunFile & { documentId: number | null }> = [];
  if (sourceDir) {
    const detect = plan.steps.find((s) => s.type === 'detect');
    // the paths a run would store them under (storedSourceRoot), so that an unchanged file shows as unchanged
    const scan = await scanSource(db, await storedSourceRoot(db, sourceDir), {
      extensions: (detect?.config.extensions as string[] | undefined) ?? [
        '.pdf',
        '.docx',
        '.pptx',
        '.md',
        '.txt',
      ],
      followSymlinks: (detect?.config.follow_symlinks as boolean | undefined) ?? true,
      // as the run's detect step reads them: a file changed under an unchanged stat signature shows as changed
      useStatCache: !(rehash || force),
    });
    for (const entry of scan.entries) {
      let steps: string[] = [];
      if (entry.decision === 'new' || entry.decision === 'update') steps = documentSteps.map((s) => s.name);
      else if (entry.decision === 'delete') steps = ['(retract the document: points, chunks, knowledge)'];
      // a forced run queues every document again and ignores its checkpoints (Engine.requeueStale)
      else if (entry.documentId !== null && force) steps = documentSteps.map((s) => s.name);
      else if (entry.documentId !== null) {
        const rows = await db.query<{ step_name: string; config_hash: string }>(
          'SELECT step_name, config_hash FROM step_checkpoints WHERE document_id = ? AND pipeline_id = ?',
          [entry.documentId, plan.pipeline.id],
        );
        const done = new Map(rows.map((r) => [r.step_name, r.config_hash]));
        const run = stepsToRun(documentSteps, done, profileKeysOf(engine.settings));
        steps = documentSteps.filter((s) => run.has(s.name)).map((s) => s.name);
      }
      files.push({ path: entry.path, decision: entry.decision, steps, documentId: entry.documentId });
    }
  }
  const queued = await db.query<{ path: string; action: string; status: string }>(
    "SELECT path, action, status FROM pipeline_queue WHERE status IN ('pending', 'failed') ORDER BY id",
  );
  const llm = await estimateLlm(engine, plan, files);
  if (json) {
    process.stdout.write(
      `${JSON.stringify({ pipeline: plan.pipeline.name, versionHash: plan.versionHash, files, queued, llm }, null, 2)}\n`,
    );
    return;
  }
  process.stdout.write(
    `dry run of pipeline '${plan.pipeline.name}' (${plan.versionHash}); nothing is changed\n`,
  );
  for (const run of plan.steps.filter((s) => s.phase === 'pre'))
    process.stdout.write(`  before documents: ${run.name}\n`);
  for (const file of files) {
    const what = file.steps.length ? file.steps.join(' -> ') : 'nothing (up to date)';
    process.stdout.write(`${file.decision.padEnd(9)} ${printable(file.path)}\n          ${what}\n`);
  }
  if (queued.length) process.stdout.write(`${queued.length} item(s) already queued would be processed too\n`);
  for (const run of plan.steps.filter((s) => s.phase === 'post'))
    process.stdout.write(`  after documents: ${run.name}\n`);
  if (llm.steps.length) {
    process.stdout.write(
      `\nLLM calls and tokens this run would need (first run, no cache hits; LLM: ${engine.profile.llm}):\n`,
    );
    process.stdout.write(
      `${formatTable(
        ['step', 'documents', 'calls', 'tokens in', 'tokens out'],
        llm.steps.map((e) => [e.step, e.documents, e.calls, e.tokensIn, e.tokensOut]),
      )}\n`,
    );
    for (const problem of llm.problems) process.stdout.write(`  not estimated: ${problem}\n`);
  }
}
