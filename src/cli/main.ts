import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { abandonStalledPluginCalls } from '../engine/registry.js';
import { printableLines } from '../util/printable.js';
import { configModule } from './commands/config.js';
import { dbModule } from './commands/db.js';
import { fileModule } from './commands/file.js';
import { graphModule } from './commands/graph.js';
import { pipelinesModule } from './commands/pipelines.js';
import { reprocessModule } from './commands/reprocess.js';
import { askModule, contextModule, searchModule, verifyModule } from './commands/retrieval.js';
import { retryModule } from './commands/retry.js';
import { allModule, processModule, runModule, scanModule } from './commands/run.js';
import { logsModule, runsModule } from './commands/runs.js';
import { statusModule } from './commands/status.js';
import { stepsModule } from './commands/steps.js';
import { watchModule } from './commands/watch.js';
import { workerModule } from './commands/worker.js';
import { checkOptionValues, type OptionTypes } from './engine-options.js';
import { EXIT_USAGE } from './exit-codes.js';
import { printError } from './print-error.js';

/**
 * `cpe runs | head`: when the reader of the output goes away, the rest of the output is dropped and the command
 * finishes its work (a run is not cut short because nobody reads its lines). Node reports the closed pipe as an
 * 'error' event on the stream, which would end the process with a stack trace.
 */
function dropOutputOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stream.write = () => true;
  });
}

/**
 * A usage error yargs found (unknown option, missing argument). Thrown from `.fail()`: a fail handler that returns
 * lets yargs go on and run the command anyway (`cpe run --sourse=x` ran with the configured source).
 */
class UsageError extends Error {}

/**
 * Node ends a process whose event loop has nothing left to wait for, even with the command unfinished: the command
 * would end silently, its run left running. The handler of that moment ('beforeExit') first gives up on the plugin
 * calls still pending (a step's run(), a plugin module's top-level await): nothing can settle them any more, and
 * each is then recorded as failed, naming its plugin, and the command goes on. When the command still stalls, it
 * stops with exit code 1 and says what it knows: which plugin calls never finished, not a cause it cannot know.
 */
function whenStalled(): () => void {
  const abandoned: string[] = [];
  let told = false;
  return () => {
    const calls = abandonStalledPluginCalls();
    if (calls.length > 0) {
      abandoned.push(...calls);
      // one more turn of the loop: what the rejections let go on may be promises only, and without it Node ends
      // the process right after this handler, without asking again ('beforeExit' comes again if it still stalls)
      setImmediate(() => {});
      return;
    }
    if (told) return;
    told = true;
    process.stderr.write(
      abandoned.length > 0
        ? `cpe: stopped unfinished: the command still waits after ${abandoned.join(', ')} never finished, and nothing left in the process can end the wait (what the plugin started may hold what the command waits for, e.g. a statement through ctx.db inside its own ctx.db.transaction() instead of through tx)\n`
        : 'cpe: stopped unfinished: the command waits for something that nothing left in the process can do (a promise that is never settled, or operations that wait for each other)\n',
    );
    process.exitCode = 1;
  };
}

/** The `cpe` command line. Each command module parses, calls src/, prints; errors go through printError. */
export async function main(argv: string[] = hideBin(process.argv)): Promise<void> {
  dropOutputOnClosedPipe(process.stdout);
  dropOutputOnClosedPipe(process.stderr);
  const stalled = whenStalled();
  process.on('beforeExit', stalled);
  try {
    await yargs(argv)
      .scriptName('cpe')
      .usage('$0 <command> [options]\n\nContent pipeline engine: documents in, searchable knowledge out.')
      .command(runModule)
      .command(scanModule)
      .command(processModule)
      .command(fileModule)
      .command(allModule)
      .command(retryModule)
      .command(workerModule)
      .command(watchModule)
      .command(reprocessModule)
      .command(searchModule)
      .command(contextModule)
      .command(askModule)
      .command(verifyModule)
      .command(graphModule)
      .command(statusModule)
      .command(runsModule)
      .command(logsModule)
      .command(pipelinesModule)
      .command(stepsModule)
      .command(dbModule)
      .command(configModule)
      .demandCommand(1, 'name a command (cpe --help lists them)')
      .strict()
      // every command's options: a value missing, empty or given twice is a usage error, not dropped
      .check((_, options) => checkOptionValues(argv, options as unknown as OptionTypes))
      .recommendCommands()
      .help()
      .version()
      .fail((message, error) => {
        throw error ?? new UsageError(message);
      })
      .parseAsync();
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(
        `cpe: ${printableLines(error.message)}\n(cpe --help lists the commands and options)\n`,
      );
      process.exitCode = EXIT_USAGE;
    } else {
      process.exitCode = printError(error);
    }
  } finally {
    process.off('beforeExit', stalled);
  }
}
