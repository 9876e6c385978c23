import type { Argv, CommandModule } from 'yargs';
import { databaseLabel } from '../../db/migrate.js';
import { seedDatabase } from '../../db/seed.js';
import { type GlobalArgs, globalOptions, withEngineWithoutSteps } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';

const migrate: CommandModule<object, GlobalArgs> = {
  command: 'migrate',
  describe: 'create both databases if needed and apply pending numbered migrations',
  builder: (y) => globalOptions(y) as unknown as Argv<GlobalArgs>,
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      for (const db of [engine.dbs.content, engine.dbs.log]) {
        const applied = db.applied.length
          ? `applied ${db.applied.map((v) => String(v).padStart(4, '0')).join(', ')}`
          : 'up to date';
        process.stdout.write(`${databaseLabel(db.role)} (${db.location}): ${applied}\n`);
      }
      return EXIT_OK;
    });
  },
};

const seed: CommandModule<object, GlobalArgs> = {
  command: 'seed',
  describe:
    'insert the seeded pipelines (Standard, Schulungsunterlagen) where missing; never overwrites edits',
  builder: (y) => globalOptions(y) as unknown as Argv<GlobalArgs>,
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const { files, inserted } = await seedDatabase(engine.dbs.content.sql);
      process.stdout.write(`seeded ${files.join(', ')}: ${inserted} row(s) inserted\n`);
      return EXIT_OK;
    });
  },
};

export const dbModule: CommandModule = {
  command: 'db',
  describe: 'database maintenance: migrate, seed',
  builder: (y) =>
    globalOptions(y)
      .command(migrate)
      .command(seed)
      .demandCommand(1, 'name a subcommand: migrate or seed (cpe db --help)'),
  handler: () => undefined,
};
