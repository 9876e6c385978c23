import type { Argv, CommandModule } from 'yargs';
import { planPipeline } from '../../engine/plan.js';
import { assertRegistryHealthy } from '../../engine/registry.js';
import { runPipeline } from '../../engine/runner.js';
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
    process.exitCode = await withEngine(args, { concurrency: args.concurrency }, async (engine) => {
      assertRegistryHealthy(engine.registry);
      const plan = await planPipeline(
        engine.dbs.content.sql,
        engine.registry,
        args.pipeline ?? engine.config.pipeline,
      );
      const progress = createProgress();
      const cancel = cancelOnSignals();
      try {
        const summary = await runPipeline(engine, {
          plan,
          concurrency: engine.config.concurrency,
          runPreSteps: false,
          runPostSteps: false,
          keepPolling: true,
          signal: cancel.signal,
          onEvent: progress.onEvent,
        });
        progress.finish();
        printSummary(summary, false);
        return EXIT_OK;
      } finally {
        cancel.dispose();
      }
    });
  },
};
