import os from 'node:os';
import type { Argv, CommandModule } from 'yargs';
import type { SqlExecutor } from '../../db/sql.js';
import { getDocument, supersededReason } from '../../engine/documents.js';
import { planForRun } from '../../engine/plan-run.js';
import {
  enqueue,
  findQueueItem,
  inFlight,
  type QueueAction,
  releaseLeasesOfGoneProcesses,
} from '../../engine/queue.js';
import { assertRegistryHealthy } from '../../engine/registry.js';
import { type RunSummary, runPipeline } from '../../engine/runner.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { commandLine } from '../../util/command-line.js';
import { printable } from '../../util/printable.js';
import { positiveId, withEngine } from '../engine-options.js';
import { EXIT_FAILURES, EXIT_OK, exitCodeOfRun } from '../exit-codes.js';
import { createProgress } from '../progress.js';
import { cancelOnSignals } from '../signals.js';
import { printSummary, type RunArgs, runOptions } from './run.js';

/**
 * Says what became of a reprocess request whose item this run did not get: another process (a `cpe worker`) claimed
 * it first, and runs every step of it there (the item is forced). Exit code 1 when it failed there.
 */
async function reportTakenItem(
  db: SqlExecutor,
  documentId: number,
  sourcePath: string,
  hash: string,
  action: QueueAction,
): Promise<number> {
  const item = await findQueueItem(db, sourcePath, hash, action);
  const where = `queue item ${item?.id ?? '?'}`;
  if (item && inFlight(item)) {
    process.stderr.write(
      `document ${documentId} is being reprocessed by ${item.locked_by} (${where}, every step): \`cpe status\` shows when it is done\n`,
    );
    return EXIT_OK;
  }
  const failed = item?.status === 'failed' || item?.status === 'dead';
  process.stderr.write(
    `document ${documentId} was reprocessed by another process (${where}: ${item?.status ?? 'gone'}${
      failed && item?.last_error ? `: ${printable(item.last_error)}` : ''
    })\n`,
  );
  return failed ? EXIT_FAILURES : EXIT_OK;
}

/**
 * Reprocesses one document version from its archived bytes, whether or not its source file still exists or
 * has changed since. Every step runs again (caches of embeddings and LLM answers still apply).
 */
export const reprocessModule: CommandModule<object, RunArgs & { id: number }> = {
  command: 'reprocess <id>',
  describe: 'reprocess a document version from the archive (its source file may have changed or vanished)',
  // none of the run options but --pipeline and --json: one version from the archive, every step (forced anyway)
  builder: (y) =>
    runOptions(y, [])
      .positional('id', {
        type: 'number',
        demandOption: true,
        describe: 'documents.id',
      })
      .check(positiveId('id')) as unknown as Argv<RunArgs & { id: number }>,
  handler: async (args) => {
    process.exitCode = await withEngine(args, {}, async (engine) => {
      assertRegistryHealthy(engine.registry);
      const db = engine.dbs.content.sql;
      const doc = await getDocument(db, args.id);
      if (!doc) throw new ConfigError(ErrorCodes.USAGE, `no document ${args.id}`);
      const superseded = await supersededReason(db, doc);
      if (superseded) throw new ConfigError(ErrorCodes.USAGE, `cannot reprocess: ${superseded}`);
      // by default the pipeline that processed the document last (its data is that pipeline's), then the
      // configured one, then the default
      const [last] = args.pipeline
        ? []
        : await db.query<{ name: string }>(
            `SELECT p.name FROM step_checkpoints c JOIN pipeline_configs p ON p.id = c.pipeline_id
             WHERE c.document_id = ? ORDER BY c.created_at DESC, c.id DESC LIMIT 1`,
            [doc.id],
          );
      const plan = await planForRun(engine, args.pipeline ?? last?.name, commandLine());
      const action = doc.version > 1 ? 'update' : 'new';
      // its item claimed by a process now read it unforced: it would end as it is, the request not done. A process of
      // this machine that is gone holds it no longer (SQLite: its lease is released at once, as a run does)
      await releaseLeasesOfGoneProcesses(db, os.hostname());
      const held = await findQueueItem(db, doc.source_path, doc.content_hash, action);
      if (held && inFlight(held))
        throw new ConfigError(
          ErrorCodes.USAGE,
          `cannot reprocess document ${doc.id} now: its queue item ${held.id} is being processed by ${held.locked_by}; try again when it is done`,
        );
      // forced: every step runs again whichever process claims it (a `cpe worker` may be first)
      await enqueue(db, {
        path: doc.source_path,
        hash: doc.content_hash,
        action,
        documentId: doc.id,
        fileSize: doc.file_size,
        maxAttempts: engine.config.maxAttempts,
        forced: true,
      });
      const progress = createProgress(process.stderr, args.json);
      const cancel = cancelOnSignals();
      let summary: RunSummary;
      try {
        summary = await runPipeline(engine, {
          plan,
          concurrency: 1,
          runPreSteps: false,
          force: true,
          onlyPaths: [doc.source_path],
          // Ctrl-C / SIGTERM: the document in flight finishes its steps (it was killed in the middle of one)
          drain: cancel.signal,
          onEvent: progress.onEvent,
          onLog: progress.onLog,
        });
      } finally {
        cancel.dispose();
      }
      progress.finish();
      printSummary(summary, args.json);
      // cancelled before it took the item: the item stays queued (forced) for the next run or worker
      if (summary.docsTotal > 0 || summary.status === 'cancelled') return exitCodeOfRun(summary);
      return reportTakenItem(db, doc.id, doc.source_path, doc.content_hash, action);
    });
  },
};
