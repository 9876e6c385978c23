/**
 * Who hears of an LLM request that failed and is tried again. The limiter retries inside one step's call (a 500, a
 * 429, a timeout), which no step result shows: without a notice, a server that fails every request looks like a
 * run that hangs. A run listens while it lasts and writes each notice to its log (ki_dev.pipeline_log), so the
 * retries are findable there. This module is small on purpose: the runner imports it without loading any client.
 */

export interface RetryNotice {
  /** the try that failed (1 = the first) */
  attempt: number;
  /** the tries a request gets after its first */
  maxRetries: number;
  delayMs: number;
  error: unknown;
}

type Listener = (notice: RetryNotice) => void;

/**
 * Kept on the global object under a registered symbol: the runner loads this module with its own imports, the
 * limiter with the LLM clients (imported on first use), and a loader that gives the two graphs their own copies
 * of a module (tsx running the sources does) would otherwise give each its own set of listeners.
 */
const LISTENERS = Symbol.for('cpe.llmRetryListeners');
const shared = globalThis as { [LISTENERS]?: Set<Listener> };
shared[LISTENERS] ??= new Set<Listener>();
const listeners = shared[LISTENERS];

/** Hears every retry of every LLM endpoint of this process until the returned function is called. */
export function onLlmRetry(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Tells every listener; a listener that throws is not the request's problem. */
export function noticeLlmRetry(notice: RetryNotice): void {
  for (const listener of listeners) {
    try {
      listener(notice);
    } catch {
      // a log that cannot be written must not fail the request being retried
    }
  }
}

/** One line for a log: what failed, which try it was, when the next one comes. */
export function describeRetry(notice: RetryNotice): string {
  const reason = notice.error instanceof Error ? notice.error.message : String(notice.error);
  return `LLM request failed (${reason}): try ${notice.attempt + 1} of ${notice.maxRetries + 1} in ${(notice.delayMs / 1000).toFixed(1)} s`;
}
