import path from 'node:path';
import type { Argv, CommandModule, Options } from 'yargs';
import type { Engine } from '../../engine/engine.js';
import { planPipeline } from '../../engine/plan.js';
import { planForRun, recordRefusedRun } from '../../engine/plan-run.js';
import { assertRegistryHealthy } from '../../engine/registry.js';
import { type RunEvent, type RunSummary, runPipeline } from '../../engine/runner.js';
import { sourceFolder } from '../../engine/scan.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { commandLine } from '../../util/command-line.js';
import { printable } from '../../util/printable.js';
import { type GlobalArgs, globalOptions, positiveId, withEngine } from '../engine-options.js';
import { EXIT_OK, exitCodeOfRun } from '../exit-codes.js';
import { createProgress } from '../progress.js';
import { cancelOnSignals } from '../signals.js';

export interface RunArgs extends GlobalArgs {
  pipeline?: string;
  source?: string;
  concurrency?: number;
  'dry-run'?: boolean;
  force?: boolean;
  rehash?: boolean;
  json?: boolean;
}

/**
 * The options of the commands that run a pipeline beyond --pipeline and --json, each described once. A command offers
 * those it honours (runOptions): one it accepted and ignored did what the user had not asked for (`cpe file
 * --dry-run` stored the file, `cpe watch --force` forced nothing), where yargs' strict mode refuses it.
 */
const runOptionSpecs = {
  source: { type: 'string', describe: 'folder to scan (CPE_SOURCE)' },
  concurrency: { type: 'number', describe: 'documents processed at once (default 4)' },
  'dry-run': { type: 'boolean', describe: 'list what would be done per file; change nothing' },
  force: {
    type: 'boolean',
    describe: 'reprocess every document, ignoring checkpoints (caches still apply)',
  },
  rehash: {
    type: 'boolean',
    describe:
      'read and hash every source file, also those whose size, times and inode are unchanged since they were hashed',
  },
} as const satisfies Record<string, Options>;

export type RunOption = keyof typeof runOptionSpecs;

/** --pipeline and --json, which every command that runs a pipeline honours, and those of `honoured`. */
export const runOptions = <T>(yargs: Argv<T>, honoured: readonly RunOption[]) =>
  globalOptions(yargs)
    .option('pipeline', { type: 'string', describe: 'pipeline name (default: the is_default one)' })
    .options(Object.fromEntries(honoured.map((name) => [name, runOptionSpecs[name]])))
    .option('json', { type: 'boolean', describe: 'print the run summary as JSON' });

export function printSummary(summary: RunSummary, json: boolean | undefined, scan?: ScanCounts) {
  if (json) {
    process.stdout.write(`${JSON.stringify(scan ? { ...summary, scan } : summary, null, 2)}\n`);
    return;
  }
  const seconds = (summary.durationMs / 1000).toFixed(1);
  process.stdout.write(
    `run ${summary.runId} ${summary.status === 'ok' && summary.docsFailed > 0 ? 'ok, with failures' : summary.status}: ${summary.docsDone} done, ${summary.docsFailed} failed, ${summary.docsSkipped} skipped` +
      `${summary.docsTakenOver > 0 ? `, ${summary.docsTakenOver} taken over by another process` : ''} ` +
      `of ${summary.docsTotal} in ${seconds} s (steps: ${summary.stepsOk} ok, ${summary.stepsFailed} failed, ${summary.stepsSkipped} skipped)\n`,
  );
  // their work is not lost: the process that holds them does it (and when it ends, the next run takes them)
  for (const item of summary.takenOver) process.stdout.write(`  taken over: ${printable(item.path)}\n`);
  for (const failure of summary.failures)
    process.stdout.write(`  failed: ${printable(failure.path)}\n    ${printable(failure.error)}\n`);
}

/** What a scan found and queued: `cpe scan`'s line, and the `scan` object of `run --json` / `scan --json`. */
export interface ScanCounts {
  source: string;
  new: number;
  changed: number;
  unchanged: number;
  deleted: number;
  ignored: number;
  unreadable: number;
  /** unchanged files whose documents were queued again: every one with --force, else those not up to date */
  requeued: number;
  /** new + changed + deleted + requeued */
  queued: number;
}

/** The scan's figures from its detect step's counts and the run's requeued documents. */
function scanCounts(source: string, counts: Record<string, number>, requeued: number): ScanCounts {
  const n = (key: string) => counts[key] ?? 0;
  return {
    source,
    new: n('new'),
    changed: n('update'),
    unchanged: n('unchanged'),
    deleted: n('delete'),
    ignored: n('ignored'),
    unreadable: n('unreadable'),
    requeued,
    queued: n('new') + n('update') + n('delete') + requeued,
  };
}

/**
 * `cpe scan`'s line, with the unchanged files it queued again and why. Those were left out once: a `scan --force`
 * said "nothing to queue" and queued every file.
 */
function scanLine(scan: ScanCounts, force: boolean): string {
  const again =
    scan.requeued > 0
      ? ` (${scan.requeued} queued again: ${force ? '--force' : 'not up to date with the pipeline'})`
      : '';
  return (
    `scanned ${scan.source}: ${scan.new} new, ${scan.changed} changed, ${scan.unchanged} unchanged${again}, ${scan.deleted} deleted; ` +
    (scan.queued > 0 ? `${scan.queued} queued (\`cpe process\` processes them)\n` : 'nothing to queue\n')
  );
}

/** scan + process with one pipeline: the main job. */
export async function runCommand(
  engine: Engine,
  args: RunArgs,
  mode: { scan: boolean; process: boolean; limit?: number },
) {
  assertRegistryHealthy(engine.registry);
  // a dry run changes nothing, not even ki_dev
  const command = commandLine();
  const plan = args['dry-run']
    ? await planPipeline(engine.dbs.content.sql, engine.registry, args.pipeline ?? engine.config.pipeline)
    : await planForRun(engine, args.pipeline, command);
  if (mode.scan && !engine.config.source && plan.hasStepType('detect')) {
    // the scan would end skipped and the run would do nothing, with the reason only in ki_dev
    const error = new ConfigError(
      ErrorCodes.USAGE,
      `no source folder to scan: give --source=DIR, or set CPE_SOURCE or "source" in the config file`,
    );
    if (!args['dry-run']) await recordRefusedRun(engine, plan.pipeline.name, command, error);
    throw error;
  }
  // a command that only processes the queue does not read the folder
  const sourceDir = engine.config.source
    ? mode.scan
      ? sourceFolder(engine.config.source)
      : path.resolve(engine.config.source)
    : undefined;
  if (args['dry-run']) {
    // imported here: the scan it reads the folder with is ~10 ms of every command's start otherwise
    const { printDryRun } = await import('../dry-run.js');
    // `process` reads no folder: its dry run lists the queue, not what a scan of CPE_SOURCE would find
    await printDryRun(engine, plan, mode.scan ? sourceDir : undefined, {
      json: args.json ?? false,
      force: args.force ?? false,
      rehash: args.rehash ?? false,
    });
    return EXIT_OK;
  }
  const progress = createProgress(process.stderr, args.json);
  const cancel = cancelOnSignals();
  /** what the scan found, for a command that only scans (its run processes no document to show) */
  let scanned: Record<string, number> | undefined;
  const onEvent = (event: RunEvent) => {
    if (event.type === 'step-finished' && event.stepType === 'detect' && event.status === 'ok')
      scanned = event.counts;
    progress.onEvent(event);
  };
  try {
    const summary = await runPipeline(engine, {
      plan,
      sourceDir: mode.scan ? sourceDir : undefined,
      runPreSteps: mode.scan,
      runPostSteps: mode.process,
      limit: mode.process ? mode.limit : 0,
      concurrency: engine.config.concurrency,
      force: args.force,
      rehash: args.rehash,
      // Ctrl-C / SIGTERM: the documents in flight finish, nothing new starts
      drain: cancel.signal,
      onEvent,
      onLog: progress.onLog,
    });
    progress.finish();
    const scan = scanned && sourceDir ? scanCounts(sourceDir, scanned, summary.docsRequeued) : undefined;
    printSummary(summary, args.json, scan);
    // `run` shows what it processed; `scan` processes nothing, so its line says what it found and queued
    if (!mode.process && scan && !args.json) process.stdout.write(scanLine(scan, args.force ?? false));
    return exitCodeOfRun(summary);
  } finally {
    cancel.dispose();
  }
}

/**
 * A dry run changes no data: it upgrades no database (migrated, the data would be refused by the cpe it came from;
 * it did so without a word). A new data folder it creates, so that it can show what a first run would do.
 */
const dryRunOpening = (args: RunArgs) => (args['dry-run'] ? { migrate: 'new-only' as const } : {});

export const runModule: CommandModule<object, RunArgs> = {
  command: 'run',
  describe: 'scan the source folder and process everything queued with a pipeline',
  builder: (y) =>
    runOptions(y, ['source', 'concurrency', 'dry-run', 'force', 'rehash']) as unknown as Argv<RunArgs>,
  handler: async (args) => {
    process.exitCode = await withEngine(
      args,
      { source: args.source, concurrency: args.concurrency },
      (engine) => runCommand(engine, args, { scan: true, process: true }),
      dryRunOpening(args),
    );
  },
};

export const allModule: CommandModule<object, RunArgs> = {
  command: 'all',
  describe: "scan and process everything (the original system's name for run)",
  builder: runModule.builder,
  handler: runModule.handler,
};

export const scanModule: CommandModule<object, RunArgs> = {
  command: 'scan',
  describe: 'scan the source folder and queue new, changed and deleted files (no processing)',
  // no --concurrency: a scan processes no document
  builder: (y) => runOptions(y, ['source', 'dry-run', 'force', 'rehash']) as unknown as Argv<RunArgs>,
  handler: async (args) => {
    process.exitCode = await withEngine(
      args,
      { source: args.source },
      (engine) => runCommand(engine, args, { scan: true, process: false }),
      dryRunOpening(args),
    );
  },
};

export const processModule: CommandModule<object, RunArgs & { limit?: number }> = {
  command: 'process',
  describe: 'process queued items (no scan)',
  // no --source or --rehash: it takes what is queued and reads no folder
  builder: (y) =>
    runOptions(y, ['concurrency', 'dry-run', 'force'])
      .option('limit', {
        type: 'number',
        describe: 'stop after this many queue items',
      })
      .check(positiveId('limit', { optional: true })) as unknown as Argv<RunArgs & { limit?: number }>,
  handler: async (args) => {
    process.exitCode = await withEngine(
      args,
      { concurrency: args.concurrency },
      (engine) => runCommand(engine, args, { scan: false, process: true, limit: args.limit }),
      dryRunOpening(args),
    );
  },
};
