import { stat } from 'node:fs/promises';
import type { Argv, CommandModule } from 'yargs';
import { newestVersion } from '../../engine/documents.js';
import { planForRun } from '../../engine/plan-run.js';
import { enqueue } from '../../engine/queue.js';
import { assertRegistryHealthy } from '../../engine/registry.js';
import { runPipeline } from '../../engine/runner.js';
import { storedFilePath } from '../../engine/scan.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { commandLine } from '../../util/command-line.js';
import { sha256File } from '../../util/hash.js';
import { withEngine } from '../engine-options.js';
import { EXIT_FAILURES, EXIT_OK, exitCodeOfRun } from '../exit-codes.js';
import { createProgress } from '../progress.js';
import { cancelOnSignals } from '../signals.js';
import { printJson } from '../table.js';
import { printSummary, type RunArgs, runOptions } from './run.js';

export const fileModule: CommandModule<object, RunArgs & { path: string }> = {
  command: 'file <path>',
  describe: 'process one file now (queued and processed like any other; unchanged files cost nothing)',
  // --force only: one file, processed now (no folder, no concurrency, hashed anyway); a dry run would have to plan
  // what `run --dry-run` plans for a folder, and was a real run
  builder: (y) =>
    runOptions(y, ['force']).positional('path', {
      type: 'string',
      demandOption: true,
      describe: 'the file',
    }) as unknown as Argv<RunArgs & { path: string }>,
  handler: async (args) => {
    process.exitCode = await withEngine(args, {}, async (engine) => {
      assertRegistryHealthy(engine.registry);
      // stored as a run of its folder stores it: under the folder's real path (storedSourceRoot)
      const file = await storedFilePath(engine.dbs.content.sql, args.path);
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile()) throw new ConfigError(ErrorCodes.USAGE, `${file} is not a file`);
      const plan = await planForRun(engine, args.pipeline, commandLine());
      const { hash, size } = await sha256File(file);
      const newest = await newestVersion(engine.dbs.content.sql, file);
      const current = newest && newest.status !== 'deleted' ? newest : undefined;
      if (current?.content_hash === hash && !args.force) {
        // nothing to do; a version that failed stays failed (exit 1, as when it failed) until retried or forced
        const failed = current.status === 'failed';
        if (args.json) {
          printJson({
            file,
            unchanged: true,
            document: {
              id: current.id,
              version: current.version,
              status: current.status,
              error: current.error,
            },
          });
        } else {
          process.stdout.write(
            `${file}: unchanged (document ${current.id}, version ${current.version}, ${current.status})${
              failed
                ? `: ${current.error ?? 'no reason recorded'}; \`cpe retry\` or --force processes it again`
                : ''
            }\n`,
          );
        }
        return failed ? EXIT_FAILURES : EXIT_OK;
      }
      await enqueue(engine.dbs.content.sql, {
        path: file,
        hash,
        action: current
          ? current.content_hash === hash
            ? current.version > 1
              ? 'update'
              : 'new'
            : 'update'
          : 'new',
        documentId: current?.content_hash === hash ? current.id : null,
        fileSize: size,
        maxAttempts: engine.config.maxAttempts,
        forced: args.force === true,
      });
      const progress = createProgress(process.stderr, args.json);
      const cancel = cancelOnSignals();
      try {
        const summary = await runPipeline(engine, {
          plan,
          concurrency: 1,
          runPreSteps: false,
          force: args.force,
          onlyPaths: [file],
          // Ctrl-C / SIGTERM: the documents in flight finish, nothing new starts
          drain: cancel.signal,
          onEvent: progress.onEvent,
          onLog: progress.onLog,
        });
        progress.finish();
        printSummary(summary, args.json);
        return exitCodeOfRun(summary);
      } finally {
        cancel.dispose();
      }
    });
  },
};
