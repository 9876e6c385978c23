import type { QueueItem } from '../engine/queue.js';
import type { LogLevel } from '../engine/run-log.js';
import type { RunEvent } from '../engine/runner.js';
import { printable, printableMessage } from '../util/printable.js';

/**
 * Why an item is processed, as its line shows it: the queue's action (new, update, delete), or "again" for a
 * document processed once more (`cpe reprocess`, a pipeline edited since its last run, `--force`): those are
 * queued with the document they are for, new and changed files without one.
 */
const why = (item: QueueItem): string =>
  typeof item.document_id === 'number' && item.action !== 'delete' ? 'again' : item.action;

/**
 * Shows a run: on a terminal one line that updates in place; otherwise (pipes, CI, logs) plain lines, one
 * per finished document. Failures always get their own line, and so do the run's warnings and errors (`onLog`,
 * shown with `quiet` too): on a terminal the status line is cleared first and drawn again below them. Paths and
 * messages go through printable: a file name's control characters are shown, not sent to the terminal.
 */
export function createProgress(stream: NodeJS.WriteStream = process.stderr, quiet = false) {
  const tty = Boolean(stream.isTTY) && !process.env.CI;
  let done = 0;
  let failed = 0;
  let skipped = 0;
  let started = 0;
  const began = Date.now();
  const line = (text: string) => stream.write(`${text}\n`);
  const status = () => {
    if (!tty) return;
    const seconds = ((Date.now() - began) / 1000).toFixed(1);
    stream.write(
      `\r\x1b[2K${done} done, ${failed} failed, ${skipped} skipped, ${started - done - failed - skipped} in progress (${seconds} s)`,
    );
  };
  return {
    onEvent(event: RunEvent) {
      if (quiet) return;
      switch (event.type) {
        case 'run-started':
          line(`run ${event.runId}: pipeline '${printable(event.pipeline)}'`);
          for (const [part, where] of Object.entries(event.profile))
            line(`  ${part.padEnd(10)} ${printable(where)}`);
          break;
        case 'document-started':
          started++;
          status();
          break;
        case 'document-finished':
          if (event.status === 'done') done++;
          else if (event.status === 'failed') failed++;
          else skipped++;
          if (tty) {
            if (event.status === 'failed') stream.write(`\r\x1b[2Kfailed: ${printable(event.item.path)}\n`);
            status();
          } else if (event.status !== 'released') {
            line(`${event.status.padEnd(7)} ${why(event.item).padEnd(6)} ${printable(event.item.path)}`);
          }
          break;
        case 'step-finished':
          // a document's failed step is the document's failure: its error line (onLog) and its "failed" line show it
          if (event.status === 'failed' && event.documentId === null) {
            const text = `  step ${printable(event.step)} failed: ${printableMessage(event.reason)}`;
            if (tty) stream.write(`\r\x1b[2K${text}\n`);
            else line(text);
          }
          break;
      }
    },
    onLog(_level: LogLevel, message: string) {
      const text = printableMessage(message);
      if (tty && !quiet) {
        stream.write(`\r\x1b[2K${text}\n`);
        status();
      } else {
        line(text);
      }
    },
    finish() {
      if (tty && !quiet) stream.write('\n');
    },
  };
}
