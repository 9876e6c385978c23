/**
 * Below this many inputs per request, splitting work over more requests costs more than it saves: a request's
 * fixed cost is worth a few dozen inputs' work on the test server (5 ms against 0.2 ms per input).
 */
export const MIN_SPREAD_BATCH = 16;

/**
 * The size of requests that cut `inputs` into equal parts whose number is a multiple of the request slots, so
 * that no slot idles while the last requests run (20,000 inputs at batch 1024 and 8 slots: 24 requests of 834,
 * not 19 of 1024 and one of 544). Little work is spread over as many requests as keep 16 inputs each (a
 * document's 40 chunks as 2 requests of 20 finish sooner than 1 of 40, and cost less than 8 of 5).
 */
export function evenBatchSize(inputs: number, slots: number, batchSize: number): number {
  const byCount = Math.ceil(inputs / batchSize);
  let count = Math.max(1, Math.ceil(byCount / slots)) * slots;
  if (inputs / count < MIN_SPREAD_BATCH) count = Math.max(1, byCount, Math.floor(inputs / MIN_SPREAD_BATCH));
  return Math.min(batchSize, Math.ceil(inputs / count));
}

/**
 * The size of the first requests sent to a host that had nothing to do: small, so that they are built, sent and
 * read at once and the server's slots start within a few milliseconds instead of after several large bodies
 * have crossed the wire; the large requests arrive while the small ones run (1/16 of the batch size: 64 at 1024).
 */
export function starterBatchSize(batchSize: number): number {
  return Math.min(batchSize, Math.max(MIN_SPREAD_BATCH, Math.ceil(batchSize / 16)));
}
