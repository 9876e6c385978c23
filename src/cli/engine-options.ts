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
  { stepPlugins = true, migrate }: { stepPlugins?: boolean; migrate?: boolean | 'new-only' } = {},
): Promise<R> {
  const engine = await openEngine({
    configPath: args.config,
    flags: { dataDir: args['data-dir'], ...flags },
    stepPlugins,
    migrate,
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

/** The option types yargs collected for the command being run (its parser's `getOptions()`). */
export interface OptionTypes {
  boolean: string[];
  array: string[];
  count: string[];
  alias: Record<string, string[]>;
  key: Record<string, unknown>;
}

/** What yargs-parser takes for a flag rather than a value (`--x`, `-x`; not `-`, `-5` or `-0.5`). */
const looksLikeFlag = (token: string) =>
  /^-[^0-9]/.test(token) && !/^-([0-9]+(\.[0-9]+)?|\.[0-9]+)$/.test(token);

/**
 * The option a flag's name means, one name for each option however it is given: the key, an alias of it (`-o`
 * for `--output`: yargs lists both as keys), or the key in camel case (`--maxTokens`).
 */
function optionKey(name: string, options: OptionTypes): string | undefined {
  for (const candidate of [name, name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)]) {
    const aliased = Object.entries(options.alias).find(
      ([key, aliases]) => key === candidate || aliases.includes(candidate),
    );
    if (aliased) return aliased[0];
    if (candidate in options.key) return candidate;
  }
  return undefined;
}

/**
 * The one check of option values, for every command (main.ts registers it): yargs takes an option given without
 * its value as not given, or as empty, and goes on. `cpe graph export --output` (an unset variable in a script)
 * wrote to standard output with exit 0, `cpe runs --last` showed the default 10, `--json=maybe` was text output,
 * and `--last=2 --last=3` was refused as "last must be a whole number above 0". Each is a usage error naming the
 * option: a value missing or empty, a boolean given a value other than true or false, an option of one value given
 * twice. Read from the command line's words (`tokens`), which still tell these apart; unknown options are left to
 * yargs' strict mode, and list options (`type: 'array'`) and counts may be given more than once.
 */
export function checkOptionValues(tokens: readonly string[], options: OptionTypes): true {
  const given = new Set<string>();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token === '--') break;
    const flag = /^(--?)([^=]+)(?:=([\s\S]*))?$/.exec(token);
    // a word that is no option (a command, a positional argument, a value), or short flags run together (-ab)
    if (!flag || !looksLikeFlag(token) || (flag[1] === '-' && flag[2]!.length > 1)) continue;
    const [, dashes = '', name = '', inline] = flag;
    const negated = dashes === '--' && name.startsWith('no-') ? optionKey(name.slice(3), options) : undefined;
    const key =
      negated !== undefined && options.boolean.includes(negated) ? negated : optionKey(name, options);
    if (key === undefined || options.count.includes(key)) continue;
    if (options.boolean.includes(key)) {
      if (inline !== undefined && (key === negated || !/^(true|false)$/.test(inline)))
        throw new ConfigError(
          ErrorCodes.USAGE,
          key === negated
            ? `${dashes}${name} is a switch: give it alone, not '${inline}'`
            : `${dashes}${name} is a switch: give it alone (or =true, =false), not '${inline}'`,
        );
      continue;
    }
    if (options.array.includes(key)) continue;
    const value =
      inline ?? (i + 1 < tokens.length && !looksLikeFlag(tokens[i + 1]!) ? tokens[i + 1] : undefined);
    if (value === undefined) throw new ConfigError(ErrorCodes.USAGE, `${dashes}${name} needs a value`);
    if (value === '') throw new ConfigError(ErrorCodes.USAGE, `${dashes}${name} is empty: give it a value`);
    if (given.has(key)) throw new ConfigError(ErrorCodes.USAGE, `--${key} is given more than once`);
    given.add(key);
    if (inline === undefined) i++;
  }
  return true;
}
