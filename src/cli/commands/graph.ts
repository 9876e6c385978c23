import { writeFile } from 'node:fs/promises';
import type { Argv, CommandModule } from 'yargs';
import { exportGraph, type GraphFormat } from '../../knowledge/graph-export.js';
import { type GlobalArgs, globalOptions, withEngineWithoutSteps } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';

interface GraphArgs extends GlobalArgs {
  format: GraphFormat;
  output?: string;
}

const exportCommand: CommandModule<object, GraphArgs> = {
  command: 'export',
  describe: 'entities, relations and taxonomy from SQL as GraphML or JSON',
  builder: (y) =>
    globalOptions(y)
      .option('format', { choices: ['graphml', 'json'] as const, default: 'json' as GraphFormat })
      .option('output', {
        type: 'string',
        alias: 'o',
        describe: 'file to write (default: standard output)',
      }) as unknown as Argv<GraphArgs>,
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const text = await exportGraph(engine.dbs.content.sql, args.format);
      if (args.output) await writeFile(args.output, text);
      else process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
      return EXIT_OK;
    });
  },
};

export const graphModule: CommandModule = {
  command: 'graph',
  describe: 'the knowledge graph (materialised from SQL)',
  builder: (y) => y.command(exportCommand).demandCommand(1, 'name a subcommand: export (cpe graph --help)'),
  handler: () => undefined,
};
