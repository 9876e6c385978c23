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
import { planForRun } from './engine/plan-run.js';
import { assertRegistryHealthy } from './engine/registry.js';
import type { LogLevel } from './engine/run-log.js';
import { type RunEvent, type RunSummary, runPipeline } from './engine/runner.js';
import { sourceFolder } from './engine/scan.js';
import { type DocumentStatus, documentStatus, type StatusReport, statusReport } from './engine/status.js';
import { CpeError, ErrorCodes } from './errors.js';

export type { DocumentRef, Logger, StepContext, StepOutcome, StepPlugin } from './engine/plugin.js';
export { ConfigError, CpeError, ErrorCodes, FileError, ProviderError } from './errors.js';
export type { AppConfig, DocumentStatus, LogLevel, Plan, RunEvent, RunSummary, StatusReport };

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
    /** shows the run's warnings and errors as they happen, one line each; default: on stderr */
    onLog?: (level: LogLevel, line: string) => void;
  }): Promise<RunSummary>;
  status(): Promise<StatusReport>;
  document(idOrPath: string | number): Promise<DocumentStatus | undefined>;
  close(): Promise<void>;
}

export async function open(options: OpenEngineOptions = {}): Promise<Cpe> {
  const engine = await openEngine(options);
  // relative paths given to the handle are relative to its cwd, as its data folder is
  const cwd = options.cwd ?? process.cwd();
  /** calls in progress: close() cancels the runs among them and waits for all before it closes the databases */
  const inFlight = new Set<Promise<unknown>>();
  const runs = new Set<AbortController>();
  let closing: Promise<void> | undefined;
  /** A call of the API: refused once close() was called, waited for by close() while it runs. */
  const call = <T>(work: () => Promise<T>): Promise<T> => {
    if (closing) return Promise.reject(new CpeError(ErrorCodes.USAGE, 'cpe is closed: close() was called'));
    const promise = work();
    inFlight.add(promise);
    const forget = () => inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  };
  const planned = (pipeline?: string) => {
    assertRegistryHealthy(engine.registry);
    return planPipeline(engine.dbs.content.sql, engine.registry, pipeline ?? engine.config.pipeline);
  };
  const plan = (pipeline?: string) => call(() => planned(pipeline));
  return {
    engine,
    plan,
    run: (runOptions = {}) =>
      call(async () => {
        const source = runOptions.source ?? engine.config.source;
        assertRegistryHealthy(engine.registry);
        // registered before planning: a close() meanwhile cancels this run too, instead of waiting for all of it
        const cancel = new AbortController();
        runs.add(cancel);
        try {
          // as `cpe run`: a refused run is recorded in ki_dev, a source folder that is not there is a usage error
          const plan = await planForRun(engine, runOptions.pipeline, 'api');
          const sourceDir = source ? sourceFolder(path.resolve(cwd, source)) : undefined;
          return await runPipeline(engine, {
            plan,
            sourceDir,
            concurrency: runOptions.concurrency ?? engine.config.concurrency,
            force: runOptions.force,
            rehash: runOptions.rehash,
            signal: runOptions.signal ? AbortSignal.any([runOptions.signal, cancel.signal]) : cancel.signal,
            onEvent: runOptions.onEvent,
            onLog: runOptions.onLog,
            command: 'api',
          });
        } finally {
          runs.delete(cancel);
        }
      }),
    status: () => call(() => statusReport(engine)),
    document: (idOrPath) =>
      call(() =>
        documentStatus(
          engine,
          /^\d+$/.test(String(idOrPath)) ? String(idOrPath) : path.resolve(cwd, String(idOrPath)),
        ),
      ),
    // runs in progress are cancelled (their items handed back) and every call is waited for: the databases are
    // not closed under them
    close: () => {
      closing ??= (async () => {
        for (const cancel of runs) cancel.abort(new CpeError(ErrorCodes.CANCELLED, 'cpe is closing'));
        await Promise.allSettled([...inFlight]);
        await engine.close();
      })();
      return closing;
    },
  };
}
