import type { Argv, CommandModule } from 'yargs';
import { schemaProblems } from '../../engine/registry.js';
import { type GlobalArgs, globalOptions, withEngine } from '../engine-options.js';
import { EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { printJson } from '../table.js';

/**
 * One line per property of a config schema: its type, default and description. The schema may be a custom plugin's
 * that is not valid JSON Schema (`properties` not an object, a property's schema null): its problem is listed with
 * the others, and what can be shown is shown here, as `--json` does.
 */
function propertyLines(configSchema: object): string[] {
  const { properties } = configSchema as { properties?: unknown };
  if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) return [];
  return Object.entries(properties).map(([key, schema]) => {
    if (schema === null || typeof schema !== 'object') return `${key}: schema ${JSON.stringify(schema)}`;
    const { type, default: def, description } = schema as Record<string, unknown>;
    return `${key}: ${JSON.stringify(type ?? 'any')}${def === undefined ? '' : ` = ${JSON.stringify(def)}`}${
      typeof description === 'string' && description ? `  (${description})` : ''
    }`;
  });
}

export const stepsModule: CommandModule<object, GlobalArgs> = {
  command: 'steps',
  describe:
    'every step type: scope, description, source (built-in or plugin file), data read and written, config schema',
  builder: (y) => globalOptions(y).option('json', { type: 'boolean' }) as unknown as Argv<GlobalArgs>,
  handler: async (args) => {
    process.exitCode = await withEngine(args, {}, async (engine) => {
      // broken modules, and the schemas that do not compile (loading the plugins does not compile them)
      const problems = [...engine.registry.problems, ...schemaProblems(engine.registry)];
      const steps = engine.registry.all().map((r) => ({
        type: r.plugin.type,
        scope: r.plugin.scope,
        description: r.plugin.description,
        source: r.source,
        reads: r.plugin.reads ?? [],
        writes: r.plugin.writes ?? [],
        configSchema: r.plugin.configSchema,
      }));
      if (args.json) {
        printJson({ steps, problems });
      } else {
        for (const step of steps) {
          process.stdout.write(`${step.type}  (${step.scope}, ${step.source})\n  ${step.description}\n`);
          const flow = [
            step.reads.length ? `reads ${step.reads.join(', ')}` : '',
            step.writes.length ? `writes ${step.writes.join(', ')}` : '',
          ].filter(Boolean);
          if (flow.length) process.stdout.write(`  ${flow.join('; ')}\n`);
          for (const line of propertyLines(step.configSchema)) process.stdout.write(`    ${line}\n`);
        }
        for (const problem of problems) process.stderr.write(`cpe: ${problem}\n`);
      }
      return problems.length ? EXIT_USAGE : EXIT_OK;
    });
  },
};
