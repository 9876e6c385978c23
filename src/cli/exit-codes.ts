import type { RunSummary } from '../engine/runner.js';

/**
 * 0 ok, 1 some documents failed (or verify found differences), 2 usage or configuration error, 130 a run stopped by
 * Ctrl-C or SIGTERM before it was done (with no document failed).
 */
export const EXIT_OK = 0;
export const EXIT_FAILURES = 1;
export const EXIT_USAGE = 2;
/**
 * A run cancelled by Ctrl-C or SIGTERM (it drained: the documents in flight finished, the rest stays queued): the
 * shell's code for an interrupted command (128 + SIGINT), so that a script tells a run that stopped unfinished from
 * one that did everything (0) and from one whose documents failed (1). `cpe worker` is stopped that way when its work
 * is done and exits 0.
 */
export const EXIT_CANCELLED = 130;

/** The exit code of a command that ran a pipeline: failed documents win over a cancel, which wins over ok. */
export function exitCodeOfRun(summary: Pick<RunSummary, 'status' | 'docsFailed'>): number {
  if (summary.docsFailed > 0 || summary.status === 'failed') return EXIT_FAILURES;
  return summary.status === 'cancelled' ? EXIT_CANCELLED : EXIT_OK;
}
