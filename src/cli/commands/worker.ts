import type { Argv, CommandModule } from 'yargs';
import { classifyMysqlError } from '../../db/executor.js';
import { planForRun } from '../../engine/plan-run.js';
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

/**
 * Claims and processes queue items until stopped. SIGTERM/SIGINT drain: no new claims, current items finish
 * or are released, then exit 0. Many workers on many machines share one MariaDB queue.
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
            const plan = await planForRun(engine, args.pipeline, commandLine());
            const progress = createProgress();
            const summary = await runPipeline(engine, {
              plan,
              concurrency: engine.config.concurrency,
              runPreSteps: false,
              runPostSteps: false,
              keepPolling: true,
              // Ctrl-C / SIGTERM: the documents in flight finish, nothing new starts
              drain: cancel.signal,
              onEvent: progress.onEvent,
              onLog: progress.onLog,
            });
            progress.finish();
            printSummary(summary, false);
            return EXIT_OK;
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
