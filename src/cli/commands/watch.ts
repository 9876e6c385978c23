import type { Argv, CommandModule } from 'yargs';
import { planForRun } from '../../engine/plan-run.js';
import { assertRegistryHealthy } from '../../engine/registry.js';
import { runPipeline } from '../../engine/runner.js';
import { sourceFolder } from '../../engine/scan.js';
import { watchFolder } from '../../engine/watch.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { commandLine } from '../../util/command-line.js';
import { withEngine } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';
import { createProgress } from '../progress.js';
import { cancelOnSignals } from '../signals.js';
import { printSummary, type RunArgs, runOptions } from './run.js';

/** a changed file must keep its size and time this long before it is read */
const SETTLE_MS = 500;
/** the longest wait a timer takes; Node fires a longer one (and one of NaN) after 1 ms */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A yargs check of --debounce: yargs reads `--debounce=abc` as NaN, which Node's timers take as 1 ms (as they take a
 * negative wait or one too long): the watch went on without the debounce it was given.
 */
function checkDebounce(argv: { debounce?: unknown }): true {
  const value = argv.debounce;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_TIMER_MS)
    return true;
  throw new ConfigError(
    ErrorCodes.USAGE,
    `debounce must be a whole number of milliseconds from 0 to ${MAX_TIMER_MS}`,
  );
}

export const watchModule: CommandModule<object, RunArgs & { debounce: number }> = {
  command: 'watch',
  describe: 'watch an import folder and process what arrives (debounced; files still being written wait)',
  // no --dry-run, --force or --rehash: each pass is a run of what changed, as it would have to be for every pass
  builder: (y) =>
    runOptions(y, ['source', 'concurrency'])
      .option('debounce', {
        type: 'number',
        default: 1500,
        describe: 'quiet milliseconds before processing',
      })
      .check(checkDebounce) as unknown as Argv<RunArgs & { debounce: number }>,
  handler: async (args) => {
    process.exitCode = await withEngine(
      args,
      { source: args.source, concurrency: args.concurrency },
      async (engine) => {
        assertRegistryHealthy(engine.registry);
        if (!engine.config.source)
          throw new ConfigError(ErrorCodes.USAGE, 'watch needs a folder: --source=DIR (or CPE_SOURCE)');
        const sourceDir = sourceFolder(engine.config.source);
        const command = commandLine();
        // an invalid pipeline at the start is an error (exit 2), as for `cpe run`
        let plan = await planForRun(engine, args.pipeline, command);
        const cancel = cancelOnSignals();
        const pass = async () => {
          // pipelines are edited with SQL while the watcher runs: each pass takes them as they are then
          let next: typeof plan;
          try {
            next = await planForRun(engine, args.pipeline, command);
          } catch (error) {
            if (!(error instanceof ConfigError)) throw error;
            process.stderr.write(
              `${error.message}\nnot processed; the next change in the folder tries again\n`,
            );
            return;
          }
          if (next.versionHash !== plan.versionHash)
            process.stderr.write(`pipeline '${next.pipeline.name}' changed: planned again\n`);
          plan = next;
          const progress = createProgress(process.stderr, args.json);
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
          // --json: each pass's summary as a JSON object, one after the other
          printSummary(summary, args.json);
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
