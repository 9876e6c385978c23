import type { Argv } from 'yargs';
import type { AppConfig } from '../config/schema.js';
import { type Engine, openEngine } from '../engine/engine.js';

/** Options every command understands. */
export interface GlobalArgs {
  config?: string;
  'data-dir'?: string;
  json?: boolean;
}

export const globalOptions = <T>(yargs: Argv<T>) =>
  yargs
    .option('config', { type: 'string', describe: 'config file (default ./cpe.config.json)' })
    .option('data-dir', {
      type: 'string',
      describe: 'data folder for the SQLite files and the archive (CPE_DATA_DIR)',
    });

/** Opens the engine with the command's flags on top of environment, config file and defaults. */
export async function withEngine<R>(
  args: GlobalArgs,
  flags: Partial<AppConfig>,
  fn: (engine: Engine) => Promise<R>,
  { stepPlugins = true }: { stepPlugins?: boolean } = {},
): Promise<R> {
  const engine = await openEngine({
    configPath: args.config,
    flags: { dataDir: args['data-dir'], ...flags },
    stepPlugins,
  });
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

/** withEngine for a command that runs no steps (status, runs, retry, search, ...): the step plugins stay unloaded. */
export const withEngineWithoutSteps = <R>(args: GlobalArgs, fn: (engine: Engine) => Promise<R>): Promise<R> =>
  withEngine(args, {}, fn, { stepPlugins: false });
