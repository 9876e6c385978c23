import type { Argv, CommandModule } from 'yargs';
import { lastRuns, runRecord } from '../../engine/status.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { parseJsonColumn } from '../../util/json.js';
import { printable, printableMessage } from '../../util/printable.js';
import { type GlobalArgs, globalOptions, positiveId, withEngineWithoutSteps } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';
import { formatTable, printJson } from '../table.js';

/** A log line's context: JSON, or the text itself where it is not (an earlier cpe cut long contexts to 8,000 characters, leaving invalid JSON). */
const contextOf = (value: unknown): unknown => {
  try {
    return parseJsonColumn(value, null);
  } catch {
    return String(value);
  }
};

/** Why runs ended as they did (killed, cancelled, failed), under a table of them: the table has no room for it. */
export const runErrors = (runs: Array<Record<string, unknown>>): string =>
  runs
    .filter((r) => r.error)
    .map((r) => `run ${r.id} ${r.status}: ${printable(r.error)}\n`)
    .join('');

export const runsModule: CommandModule<object, GlobalArgs & { last: number }> = {
  command: 'runs',
  describe: 'the last runs from ki_dev: pipeline, status, documents, steps, tokens, duration',
  builder: (y) =>
    globalOptions(y)
      .option('last', { type: 'number', default: 10, describe: 'how many' })
      .option('json', { type: 'boolean' })
      .check(positiveId('last')) as unknown as Argv<GlobalArgs & { last: number }>,
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      // a running run's counts so far, as `cpe status` shows them
      const runs: Array<Record<string, any>> = await lastRuns(engine, args.last);
      if (args.json) {
        printJson(runs.map((r) => ({ ...r, profile: parseJsonColumn(r.profile, null) })));
        return EXIT_OK;
      }
      process.stdout.write(
        `${formatTable(
          [
            'run',
            'pipeline',
            'version',
            'status',
            'docs',
            'done',
            'failed',
            'steps ok/failed/skipped',
            'tokens in/out',
            'seconds',
            'started',
            'host:pid',
          ],
          runs.map((r) => [
            r.id,
            printable(r.pipeline_name),
            r.version_hash,
            r.status,
            r.docs_total,
            r.docs_done,
            r.docs_failed,
            `${r.steps_ok}/${r.steps_failed}/${r.steps_skipped}`,
            `${r.tokens_in}/${r.tokens_out}`,
            r.duration_ms === null ? '' : (Number(r.duration_ms) / 1000).toFixed(1),
            r.started_at,
            printable(`${r.host}:${r.pid}`),
          ]),
        )}\n${runErrors(runs)}`,
      );
      return EXIT_OK;
    });
  },
};

export const logsModule: CommandModule<object, GlobalArgs & { runId?: number }> = {
  command: 'logs [run-id]',
  describe: "a run's step records and log lines from ki_dev (default: the latest run)",
  builder: (y) =>
    globalOptions(y)
      .positional('run-id', {
        type: 'number',
        describe: 'the run (`cpe runs` lists them); default: the latest',
      })
      .check(positiveId('run-id', { optional: true }))
      .option('json', { type: 'boolean' }) as unknown as Argv<GlobalArgs & { runId?: number }>,
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const log = engine.dbs.log.sql;
      const run = await runRecord(engine, args.runId);
      if (!run)
        throw new ConfigError(
          ErrorCodes.USAGE,
          args.runId === undefined ? 'no run in ki_dev yet' : `no run ${args.runId} in ki_dev`,
        );
      const steps = await log.query<Record<string, any>>(
        'SELECT * FROM pipeline_step_runs WHERE run_id = ? ORDER BY id',
        [run.id],
      );
      const lines = await log.query<Record<string, any>>(
        'SELECT * FROM pipeline_log WHERE run_id = ? ORDER BY id',
        [run.id],
      );
      if (args.json) {
        printJson({
          run: { ...run, profile: parseJsonColumn(run.profile, null) },
          steps: steps.map((s) => ({ ...s, counts: parseJsonColumn(s.counts, null) })),
          log: lines.map((l) => ({ ...l, context: contextOf(l.context) })),
        });
        return EXIT_OK;
      }
      process.stdout.write(
        `run ${run.id}: ${printable(run.pipeline_name)} ${run.status}, ${printable(run.command)}\n` +
          `${run.error ? `  ${printable(run.error)}\n` : ''}\n`,
      );
      process.stdout.write(
        `${formatTable(
          ['document', 'step', 'status', 'attempt', 'ms', 'in', 'out', 'reason / error'],
          steps.map((s) => [
            s.document_id ?? '(run)',
            printable(s.step_name),
            s.status,
            s.attempt,
            s.duration_ms,
            s.items_in,
            s.items_out,
            printable((s.error ?? s.reason ?? '').slice(0, 120)),
          ]),
        )}\n\n`,
      );
      for (const l of lines) {
        process.stdout.write(
          `${l.created_at} ${String(l.level).padEnd(5)} ${printable(l.step_name)}${l.document_id ? ` doc ${l.document_id}` : ''}: ${printableMessage(l.message)}\n`,
        );
      }
      return EXIT_OK;
    });
  },
};
