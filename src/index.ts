/**
 * The programmatic API: open cpe, plan a pipeline, run it, read the status — what the CLI does, for other
 * Node code that hands documents over without the command line.
 *
 *   const cpe = await open({ flags: { dataDir: './.cpe' } });
 *   const summary = await cpe.run({ pipeline: 'Standard', source: './documents' });
 *   console.log(await cpe.status());
 *   await cpe.close();
 */
import path from 'node:path';
import type { AppConfig } from './config/schema.js';
import { type Engine, type OpenEngineOptions, openEngine } from './engine/engine.js';
import { type Plan, planPipeline } from './engine/plan.js';
import { assertRegistryHealthy } from './engine/registry.js';
import { type RunEvent, type RunSummary, runPipeline } from './engine/runner.js';
import { type DocumentStatus, documentStatus, type StatusReport, statusReport } from './engine/status.js';

export type { DocumentRef, Logger, StepContext, StepOutcome, StepPlugin } from './engine/plugin.js';
export { ConfigError, CpeError, ErrorCodes, FileError, ProviderError } from './errors.js';
export type { AppConfig, DocumentStatus, Plan, RunEvent, RunSummary, StatusReport };

export interface Cpe {
  engine: Engine;
  /** validates and plans a pipeline (default: the is_default one) */
  plan(pipeline?: string): Promise<Plan>;
  /** scans `source` (when given) and processes the queue */
  run(options?: {
    pipeline?: string;
    source?: string;
    concurrency?: number;
    force?: boolean;
    /** read and hash every source file, even those whose stat signature is unchanged */
    rehash?: boolean;
    signal?: AbortSignal;
    onEvent?: (event: RunEvent) => void;
  }): Promise<RunSummary>;
  status(): Promise<StatusReport>;
  document(idOrPath: string | number): Promise<DocumentStatus | undefined>;
  close(): Promise<void>;
}

export async function open(options: OpenEngineOptions = {}): Promise<Cpe> {
  const engine = await openEngine(options);
  const plan = async (pipeline?: string) => {
    assertRegistryHealthy(engine.registry);
    return planPipeline(engine.dbs.content.sql, engine.registry, pipeline ?? engine.config.pipeline);
  };
  return {
    engine,
    plan,
    async run(runOptions = {}) {
      const source = runOptions.source ?? engine.config.source;
      return runPipeline(engine, {
        plan: await plan(runOptions.pipeline),
        sourceDir: source ? path.resolve(source) : undefined,
        concurrency: runOptions.concurrency ?? engine.config.concurrency,
        force: runOptions.force,
        rehash: runOptions.rehash,
        signal: runOptions.signal,
        onEvent: runOptions.onEvent,
        command: 'api',
      });
    },
    status: () => statusReport(engine),
    document: (idOrPath) => documentStatus(engine, String(idOrPath)),
    close: () => engine.close(),
  };
}
