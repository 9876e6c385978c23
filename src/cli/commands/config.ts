import type { Argv, CommandModule } from 'yargs';
import { describeConfig, loadConfig } from '../../config/load.js';
import { envNames, whenUnset } from '../../config/schema.js';
import { type GlobalArgs, globalOptions } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';
import { printJson } from '../table.js';

export const configModule: CommandModule<object, GlobalArgs> = {
  command: 'config',
  describe: 'the effective configuration and where each value comes from (secrets masked)',
  builder: (y) => globalOptions(y).option('json', { type: 'boolean' }) as unknown as Argv<GlobalArgs>,
  handler: async (args) => {
    const loaded = loadConfig({ configPath: args.config, flags: { dataDir: args['data-dir'] } });
    const shown = describeConfig(loaded);
    if (args.json) {
      printJson({ config: shown, sources: loaded.sources, configFile: loaded.configFile ?? null });
    } else {
      process.stdout.write(`config file: ${loaded.configFile ?? '(none)'}\n`);
      // every setting, in the order of their environment variables; secrets only as set or not
      const keys = [...new Set([...Object.keys(envNames), ...Object.keys(shown)])];
      for (const key of keys) {
        const value = shown[key];
        const source = loaded.sources[key as keyof typeof envNames];
        const env = envNames[key as keyof typeof envNames];
        const text = /^[A-Z_]+$/.test(key)
          ? String(value)
          : value === undefined
            ? `(unset: ${whenUnset[key as keyof typeof envNames] ?? 'none'})`
            : JSON.stringify(value);
        const origin = [source, env].filter(Boolean).join(', ');
        process.stdout.write(`  ${key.padEnd(17)} ${text}${origin ? `  [${origin}]` : ''}\n`);
      }
    }
    process.exitCode = EXIT_OK;
  },
};
