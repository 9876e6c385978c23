import type { CommandModule } from 'yargs';
import { retryFailedItems } from '../../engine/queue.js';
import { type GlobalArgs, globalOptions, withEngineWithoutSteps } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';

export const retryModule: CommandModule<object, GlobalArgs> = {
  command: 'retry',
  describe: 'requeue failed and dead queue items with fresh attempts (then: cpe process)',
  builder: (y) => globalOptions(y),
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const count = await retryFailedItems(engine.dbs.content.sql);
      process.stdout.write(`${count} item(s) requeued\n`);
      return EXIT_OK;
    });
  },
};
