import type { Argv, CommandModule } from 'yargs';
import { classifyMysqlError } from '../../db/executor.js';
import type { Engine } from '../../engine/engine.js';
import { type Plan, planPipeline } from '../../engine/plan.js';
import { planForRun } from '../../engine/plan-run.js';
import type { Logger } from '../../engine/plugin.js';
import { backoffMs } from '../../engine/queue.js';
import { assertRegistryHealthy } from '../../engine/registry.js';
import { runPipeline } from '../../engine/runner.js';
import { describeError } from '../../errors.js';
import { commandLine } from '../../util/command-line.js';
import { type GlobalArgs, globalOptions, withEngine } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';
import { createProgress } from '../progress.js';
import { cancelOnSignals } from '../signals.js';
import { printSummary } from './run.js';

interface WorkerArgs extends GlobalArgs {
  pipeline?: string;
  concurrency?: number;
}

/** How often a worker looks whether its pipeline was edited. */
const REPLAN_CHECK_MS = 5000;

/**
 * Aborts `signal` once the pipeline's rows plan to another version than `plan` (an SQL edit), with the reason the
 * run records. An edit that makes the pipeline invalid is not taken: the worker goes on under its plan and says so,
 * naming the rows, in the run's log (ki_dev) and on stderr, once per distinct problem.
 */
function watchPlan(engine: Engine, name: string | undefined, plan: Plan) {
  const changed = new AbortController();
  let logger: Logger | undefined;
  let lastRefusal: string | undefined;
  const timer = setInterval(() => {
    planPipeline(engine.dbs.content.sql, engine.registry, name ?? engine.config.pipeline).then(
      (next) => {
        lastRefusal = undefined;
        if (next.versionHash !== plan.versionHash)
          changed.abort(
            new Error(
              `pipeline '${plan.pipeline.name}' was edited (${plan.versionHash} -> ${next.versionHash}): the worker goes on under the new plan`,
            ),
          );
      },
      (error: unknown) => {
        const problem = describeError(error, 300);
        if (problem === lastRefusal) return;
        lastRefusal = problem;
        const line = `the pipeline as edited cannot be used (${problem}); going on under the plan this run started with`;
        if (logger) logger.warn(line);
        else process.stderr.write(`cpe worker: ${line}\n`);
      },
    );
  }, REPLAN_CHECK_MS);
  timer.unref();
  return {
    signal: changed.signal,
    /** the run's logger: refusals go into its log (and, through it, to stderr) */
    useLogger: (runLogger: Logger) => {
      logger = runLogger;
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * Claims and processes queue items until stopped. SIGTERM/SIGINT drain: no new claims, current items finish
 * or are released, then exit 0. A pipeline edited meanwhile is taken from the next item on (a new run). Many
 * workers on many machines share one MariaDB queue.
 */
export const workerModule: CommandModule<object, WorkerArgs> = {
  command: 'worker',
  describe: 'claim and process queue items until stopped (SIGTERM/SIGINT drain and exit 0)',
  builder: (y) =>
    globalOptions(y)
      .option('pipeline', { type: 'string', describe: 'pipeline name (default: the is_default one)' })
      .option('concurrency', {
        type: 'number',
        describe: 'items processed at once',
      }) as unknown as Argv<WorkerArgs>,
  handler: async (args) => {
    // signals are taken before the database is opened: a SIGTERM while waiting for the database exits 0 too
    const cancel = cancelOnSignals();
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          process.exitCode = await withEngine(args, { concurrency: args.concurrency }, async (engine) => {
            assertRegistryHealthy(engine.registry);
            const command = commandLine();
            // a run per plan: when the pipeline is edited with SQL, the items in flight finish under the plan
            // they began with, and the worker goes on under the new one
            for (let plan = await planForRun(engine, args.pipeline, command); ; ) {
              const changed = watchPlan(engine, args.pipeline, plan);
              const progress = createProgress();
              const summary = await runPipeline(engine, {
                plan,
                concurrency: engine.config.concurrency,
                runPreSteps: false,
                runPostSteps: false,
                keepPolling: true,
                // Ctrl-C / SIGTERM: the documents in flight finish, nothing new starts; so when the plan changed
                drain: AbortSignal.any([cancel.signal, changed.signal]),
                onEvent: progress.onEvent,
                onLog: progress.onLog,
                onRunLogger: changed.useLogger,
              });
              changed.stop();
              progress.finish();
              printSummary(summary, false);
              if (cancel.signal.aborted || !changed.signal.aborted) return EXIT_OK;
              plan = await planForRun(engine, args.pipeline, command);
              process.stderr.write(`pipeline '${plan.pipeline.name}' changed: planned again\n`);
            }
          });
          return;
        } catch (error) {
          // the database is down (not started yet, restarting, network): wait for it instead of exiting, so a
          // fleet of workers survives a database restart; any other error ends the worker as before
          if (cancel.signal.aborted || classifyMysqlError(error) !== 'connection') throw error;
          const delay = backoffMs(attempt, 1000, 30_000);
          process.stderr.write(
            `cpe worker: database unavailable (${describeError(error, 200)}); starting again in ${delay} ms\n`,
          );
          await waitOrCancel(delay, cancel.signal);
          if (cancel.signal.aborted) {
            process.exitCode = EXIT_OK;
            return;
          }
        }
      }
    } finally {
      cancel.dispose();
    }
  },
};

function waitOrCancel(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
