import type { Argv } from 'yargs';
import type { AppConfig } from '../config/schema.js';
import { type Engine, openEngine } from '../engine/engine.js';
import { ConfigError, ErrorCodes } from '../errors.js';

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

/**
 * A yargs check that an id argument is a whole number above 0: yargs reads `cpe logs abc` as NaN, which went on to
 * "no run NaN in ki_dev".
 */
export const positiveId =
  (name: string, { optional = false } = {}) =>
  (argv: Record<string, unknown>): true => {
    const value = argv[name];
    if (optional && value === undefined) return true;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return true;
    throw new ConfigError(ErrorCodes.USAGE, `${name} must be a whole number above 0`);
  };
