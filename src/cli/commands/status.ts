import type { Argv, CommandModule } from 'yargs';
import { documentStatus, statusReport } from '../../engine/status.js';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { printable, printableMessage } from '../../util/printable.js';
import { type GlobalArgs, globalOptions, withEngineWithoutSteps } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';
import { formatTable, printJson } from '../table.js';
import { runErrors } from './runs.js';

interface StatusArgs extends GlobalArgs {
  doc?: string;
}

const out = (text: string) => process.stdout.write(`${text}\n`);
export const statusModule: CommandModule<object, StatusArgs> = {
  command: 'status',
  describe: 'queue, documents, embeddings, recent runs and which parts are embedded or real servers',
  builder: (y) =>
    globalOptions(y).option('json', { type: 'boolean' }).option('doc', {
      type: 'string',
      describe: 'one document: its id or source path',
    }) as unknown as Argv<StatusArgs>,
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      if (args.doc !== undefined) {
        const report = await documentStatus(engine, String(args.doc));
        if (!report) throw new ConfigError(ErrorCodes.USAGE, `no document ${printable(args.doc)}`);
        if (args.json) {
          printJson(report);
          return EXIT_OK;
        }
        const d = report.document;
        out(`document ${d.id}: ${printable(d.source_path)}`);
        out(
          `  version ${d.version}${d.previous_version_id ? ` (previous: ${d.previous_version_id})` : ''}, status ${d.status}${Number(d.is_latest) ? ', latest' : ''}`,
        );
        out(
          `  title ${printable(d.title ?? '-')}, language ${printable(d.language ?? '-')}, ${report.pages} page(s), ${report.chunks} chunk(s)`,
        );
        // "status done" alone read as the file's current state for a version replaced since
        if (report.notCurrent) out(`  not current: ${printable(report.notCurrent)}`);
        if (report.ocrNeeded)
          out('  ocr_needed: the file has pages without a text layer (scans); their text is empty');
        if (d.error) out(`  error: ${printableMessage(d.error)}`);
        out('');
        out(
          formatTable(
            ['step', 'status', 'attempts', 'ms', 'counts', 'reason / error'],
            report.steps.map((s) => [
              printable(s.step),
              s.status,
              s.attempts,
              s.durationMs,
              printable(
                Object.entries(s.counts)
                  .map(([k, v]) => `${k}=${v}`)
                  .join(' '),
              ),
              printable((s.error ?? s.reason ?? '').slice(0, 100)),
            ]),
          ),
        );
        return EXIT_OK;
      }
      const report = await statusReport(engine);
      if (args.json) {
        printJson(report);
        return EXIT_OK;
      }
      out('parts:');
      for (const [part, where] of Object.entries(report.profile))
        out(`  ${part.padEnd(10)} ${printable(where)}`);
      const list = (counts: Record<string, number>) =>
        Object.entries(counts)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'empty';
      out(`queue:      ${list(report.queue)}`);
      out(`documents:  ${list(report.documents)}`);
      out(
        `chunks:     ${report.chunks.total} (${report.chunks.embedded} embedded, ${report.chunks.waitingForEmbedding} waiting for embeddings, ${report.chunks.failed} failed)`,
      );
      if (report.workers.length) {
        out('workers holding leases:');
        for (const w of report.workers) out(`  ${printable(w.worker)}: ${w.items} item(s) since ${w.since}`);
      }
      if (report.expiredLeases.length) {
        out('expired leases (taken over by the next claim):');
        for (const e of report.expiredLeases)
          out(`  item ${e.id} ${printable(e.path)} (was ${printable(e.lockedBy)}, until ${e.lockedUntil})`);
      }
      if (report.recentFailures.length) {
        out('failures:');
        for (const f of report.recentFailures)
          out(
            `  ${f.status} after ${f.attempts} attempt(s): ${printable(f.path)}\n    ${printable(f.lastError)}`,
          );
      }
      if (report.runStepsOwed.length) {
        out('steps after the documents owed (the next run of their pipeline runs them):');
        for (const o of report.runStepsOwed)
          out(
            `  ${printable(o.pipeline)} / ${printable(o.step)}: ${o.status === 'failed' ? `failed${o.runId === null ? '' : ` in run ${o.runId}`}` : 'not run since documents were processed'}${o.error ? `\n    ${printable(o.error.slice(0, 300))}` : ''}`,
          );
      }
      if (report.runs.length) {
        out('last runs:');
        out(
          formatTable(
            ['run', 'pipeline', 'status', 'docs', 'done', 'failed', 'seconds', 'started'],
            report.runs.map((r) => [
              r.id,
              printable(r.pipeline_name),
              r.status,
              r.docs_total,
              r.docs_done,
              r.docs_failed,
              r.duration_ms === null ? '' : (Number(r.duration_ms) / 1000).toFixed(1),
              r.started_at,
            ]),
          ),
        );
        const errors = runErrors(report.runs);
        if (errors) process.stdout.write(errors);
      }
      return EXIT_OK;
    });
  },
};
