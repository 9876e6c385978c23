import type { Argv, CommandModule } from 'yargs';
import { planPipeline } from '../../engine/plan.js';
import { assertRegistryHealthy } from '../../engine/registry.js';
import { runPipeline } from '../../engine/runner.js';
import { sourceFolder } from '../../engine/scan.js';
import { watchFolder } from '../../engine/watch.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { withEngine } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';
import { createProgress } from '../progress.js';
import { cancelOnSignals } from '../signals.js';
import { printSummary, type RunArgs, runOptions } from './run.js';

/** a changed file must keep its size and time this long before it is read */
const SETTLE_MS = 500;

export const watchModule: CommandModule<object, RunArgs & { debounce: number }> = {
  command: 'watch',
  describe: 'watch an import folder and process what arrives (debounced; files still being written wait)',
  builder: (y) =>
    runOptions(y).option('debounce', {
      type: 'number',
      default: 1500,
      describe: 'quiet milliseconds before processing',
    }) as unknown as Argv<RunArgs & { debounce: number }>,
  handler: async (args) => {
    process.exitCode = await withEngine(
      args,
      { source: args.source, concurrency: args.concurrency },
      async (engine) => {
        assertRegistryHealthy(engine.registry);
        if (!engine.config.source)
          throw new ConfigError(ErrorCodes.USAGE, 'watch needs a folder: --source=DIR (or CPE_SOURCE)');
        const sourceDir = sourceFolder(engine.config.source);
        const plan = await planPipeline(
          engine.dbs.content.sql,
          engine.registry,
          args.pipeline ?? engine.config.pipeline,
        );
        const cancel = cancelOnSignals();
        const pass = async () => {
          const progress = createProgress();
          const summary = await runPipeline(engine, {
            plan,
            sourceDir,
            concurrency: engine.config.concurrency,
            // a file still being written is left out; its next change brings another pass
            leaveChangedWithinMs: SETTLE_MS,
            // Ctrl-C / SIGTERM: the documents in flight finish, nothing new starts
            drain: cancel.signal,
            onEvent: progress.onEvent,
            onLog: progress.onLog,
          });
          progress.finish();
          printSummary(summary, false);
        };
        try {
          await watchFolder(sourceDir, {
            debounceMs: args.debounce,
            settleMs: SETTLE_MS,
            signal: cancel.signal,
            onBatch: pass,
            // what is in the folder already, with the watcher listening: nothing written meanwhile is missed
            first: async () => {
              await pass();
              process.stderr.write(`watching ${sourceDir} (Ctrl-C stops)\n`);
            },
          });
          return EXIT_OK;
        } finally {
          cancel.dispose();
        }
      },
    );
  },
};
