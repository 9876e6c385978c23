import type { Argv, CommandModule } from 'yargs';
import type { Engine } from '../../engine/engine.js';
import { planPipeline } from '../../engine/plan.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { snippet } from '../../retrieval/format.js';
import { drawDag } from '../draw-dag.js';
import { type GlobalArgs, globalOptions, withEngine } from '../engine-options.js';
import { EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { formatTable, printJson } from '../table.js';

interface PipelineArgs extends GlobalArgs {
  name?: string;
}

const list: CommandModule<object, PipelineArgs> = {
  command: 'list',
  describe: 'all pipelines with status, default flag and step count',
  builder: (y) => globalOptions(y).option('json', { type: 'boolean' }) as unknown as Argv<PipelineArgs>,
  handler: async (args) => {
    process.exitCode = await withEngine(args, {}, async (engine) => {
      const rows = await engine.dbs.content.sql.query<Record<string, any>>(
        `SELECT p.id, p.name, p.description, p.is_default, p.status,
           (SELECT COUNT(*) FROM pipeline_steps s WHERE s.pipeline_id = p.id AND s.enabled = 1) AS steps
         FROM pipeline_configs p ORDER BY p.name`,
      );
      const data = rows.map((r) => ({
        id: Number(r.id),
        name: String(r.name),
        description: r.description as string | null,
        // as planning reads the flag: 1 is the default, anything else (2, 'yes') is not
        is_default: Number(r.is_default) === 1,
        status: String(r.status),
        steps: Number(r.steps),
      }));
      if (args.json) {
        printJson(data);
        return EXIT_OK;
      }
      process.stdout.write(
        `${formatTable(
          ['id', 'name', 'default', 'status', 'steps', 'description'],
          data.map((r) => [
            r.id,
            r.name,
            r.is_default ? 'yes' : '',
            r.status,
            r.steps,
            snippet(r.description ?? '', 70),
          ]),
        )}\n`,
      );
      return EXIT_OK;
    });
  },
};

const show: CommandModule<object, PipelineArgs> = {
  command: 'show <name>',
  describe: 'the plan of a pipeline: steps, effective configs, and the DAG drawn',
  builder: (y) =>
    globalOptions(y)
      .positional('name', { type: 'string', demandOption: true })
      .option('json', { type: 'boolean' }) as unknown as Argv<PipelineArgs>,
  handler: async (args) => {
    process.exitCode = await withEngine(args, {}, async (engine) => {
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, args.name).catch(
        async (error: unknown) => {
          // an invalid pipeline: its rows as stored, so that the ones to fix can be seen; the problems follow (not
          // for one not found: a name differing in case only found another pipeline's rows on MariaDB)
          if (error instanceof ConfigError && error.code === ErrorCodes.PIPELINE_INVALID && !args.json)
            await printStoredRows(engine, args.name!);
          throw error;
        },
      );
      if (args.json) {
        printJson({
          pipeline: plan.pipeline,
          versionHash: plan.versionHash,
          steps: plan.steps.map((s) => ({
            id: s.id,
            name: s.name,
            type: s.type,
            scope: s.scope,
            phase: s.phase,
            sortOrder: s.sortOrder,
            dependsOn: s.dependsOn,
            config: s.config,
            lineageHash: s.lineageHash,
          })),
        });
        return EXIT_OK;
      }
      process.stdout.write(`${drawDag(plan)}\n\nconfigs (defaults filled):\n`);
      for (const s of plan.steps)
        process.stdout.write(`  ${s.name.padEnd(18)} ${JSON.stringify(s.config)}\n`);
      return EXIT_OK;
    });
  },
};

/** A pipeline's step rows as stored (no plan: it has problems), or nothing when there is no such pipeline. */
async function printStoredRows(engine: Engine, name: string): Promise<void> {
  // MariaDB compares names without case and accents: the exact name is what counts, as in planning
  const rows = (
    await engine.dbs.content.sql.query<Record<string, unknown>>(
      `SELECT p.name AS pipeline_name, s.id, s.name, s.step_type, s.sort_order, s.enabled, s.depends_on, s.config
       FROM pipeline_steps s JOIN pipeline_configs p ON p.id = s.pipeline_id
       WHERE p.name = ? ORDER BY s.sort_order, s.id`,
      [name],
    )
  ).filter((r) => r.pipeline_name === name);
  if (rows.length === 0) return;
  const text = (value: unknown) => (value === null || value === undefined ? '' : String(value));
  process.stdout.write(
    `${name}: its rows in pipeline_steps as stored (the pipeline is invalid; the problems follow)\n\n${formatTable(
      ['id', 'name', 'step_type', 'sort_order', 'enabled', 'depends_on', 'config'],
      rows.map((r) => [
        text(r.id),
        text(r.name),
        text(r.step_type),
        text(r.sort_order),
        text(r.enabled),
        text(r.depends_on),
        snippet(text(r.config), 60),
      ]),
    )}\n\n`,
  );
}

const validate: CommandModule<object, PipelineArgs> = {
  command: 'validate [name]',
  describe: 'check one pipeline (or all): every problem at once, each naming its row; exit 2 on errors',
  builder: (y) => globalOptions(y).positional('name', { type: 'string' }) as unknown as Argv<PipelineArgs>,
  handler: async (args) => {
    process.exitCode = await withEngine(args, {}, async (engine) => {
      const names = args.name
        ? [args.name]
        : (
            await engine.dbs.content.sql.query<{ name: string }>(
              "SELECT name FROM pipeline_configs WHERE status = 'active' ORDER BY name",
            )
          ).map((r) => r.name);
      let failed = false;
      for (const name of names) {
        try {
          const plan = await planPipeline(engine.dbs.content.sql, engine.registry, name);
          process.stdout.write(
            `ok       ${name} (${plan.steps.length} steps, version ${plan.versionHash})\n`,
          );
        } catch (error) {
          if (!(error instanceof ConfigError)) throw error;
          failed = true;
          process.stdout.write(
            `invalid  ${error.message.replace(/^pipeline '[^']*' is invalid:/, `${name}:`)}\n`,
          );
        }
      }
      // all of them: the default too, which `cpe run` without --pipeline takes (none, or more than one)
      if (!args.name) {
        const defaults = await engine.dbs.content.sql.query<{ id: number; name: string }>(
          "SELECT id, name FROM pipeline_configs WHERE is_default = 1 AND status = 'active' ORDER BY id",
        );
        if (defaults.length !== 1) {
          failed = true;
          process.stdout.write(
            defaults.length === 0
              ? 'invalid  no default pipeline (none has is_default = 1 and status active): `cpe run` needs --pipeline\n'
              : `invalid  more than one default pipeline: ${defaults.map((d) => `'${d.name}' (id=${d.id})`).join(', ')}; set is_default = 0 on all but one\n`,
          );
        }
      }
      return failed ? EXIT_USAGE : EXIT_OK;
    });
  },
};

export const pipelinesModule: CommandModule = {
  command: 'pipelines',
  describe: 'list, show and validate pipelines (edit them with SQL)',
  // the global options too: `cpe --data-dir=X pipelines bogus` blamed --data-dir as an unknown argument
  builder: (y) =>
    globalOptions(y)
      .command(list)
      .command(show)
      .command(validate)
      .demandCommand(1, 'name a subcommand: list, show NAME or validate [NAME] (cpe pipelines --help)'),
  handler: () => undefined,
};
