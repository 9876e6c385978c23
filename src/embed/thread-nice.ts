/**
 * Nice value of a local embedding thread (local-pool-worker.ts): below the main thread, which extracts, chunks
 * and writes the documents whose chunks these threads embed. With more busy threads than cores, waking a worker
 * would otherwise often take the main thread's core away; an ingestion of the shared corpus took ~2% less time,
 * one of 1,000 small documents (where the main thread is the bottleneck) ~5% less. An idle core is still used by
 * the workers in full.
 */
export const EMBED_THREAD_NICE = 5;
