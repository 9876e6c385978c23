import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
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

/** The `cpe` command line. Each command module parses, calls src/, prints; errors go through printError. */
export async function main(argv: string[] = hideBin(process.argv)): Promise<void> {
  dropOutputOnClosedPipe(process.stdout);
  dropOutputOnClosedPipe(process.stderr);
  // Node ends a process whose event loop has nothing left to wait for, even with the command unfinished: then every
  // open operation waits for another (a deadlock), and the command would end silently with the run left running
  const stalled = () => {
    process.stderr.write(
      'cpe: stopped unfinished: every operation still open waits for another, so none can end (a deadlock; in a custom step: a statement through ctx.db inside its own ctx.db.transaction() instead of through tx)\n',
    );
    process.exitCode = 1;
  };
  process.once('beforeExit', stalled);
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
      .recommendCommands()
      .help()
      .version()
      .fail((message, error) => {
        throw error ?? new UsageError(message);
      })
      .parseAsync();
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`cpe: ${error.message}\n(cpe --help lists the commands and options)\n`);
      process.exitCode = EXIT_USAGE;
    } else {
      process.exitCode = printError(error);
    }
  } finally {
    process.off('beforeExit', stalled);
  }
}
