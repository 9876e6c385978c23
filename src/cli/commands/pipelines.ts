import type { Argv, CommandModule } from 'yargs';
import { planPipeline } from '../../engine/plan.js';
import { ConfigError } from '../../errors.js';
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
        is_default: Boolean(Number(r.is_default)),
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
            (r.description ?? '').slice(0, 70),
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
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, args.name);
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
          process.stdout.write(`invalid  ${error.message}\n`);
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
  command: 'pipelines <command>',
  describe: 'list, show and validate pipelines (edit them with SQL)',
  builder: (y) => y.command(list).command(show).command(validate).demandCommand(1),
  handler: () => undefined,
};
