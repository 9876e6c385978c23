/**
 * Entry point of a local-hash-v2 worker thread (see local-pool.ts): embeds each job's texts with the same
 * function the main thread would run and sends the vectors back as views of one transferred buffer (moved, not
 * copied). A job with maxChars holds chunk inputs: they are prepared and hashed here first (prepareChunkInputs).
 */
import { isMainThread, parentPort } from 'node:worker_threads';
import { lowerThreadPriority } from '../util/thread-priority.js';
import { embedLocalHashMany } from './local-hash.js';
import { prepareChunkInputs } from './prepare.js';
import { EMBED_THREAD_NICE } from './thread-nice.js';

if (!isMainThread) lowerThreadPriority(EMBED_THREAD_NICE);

export interface LocalEmbedJob {
  id: number;
  texts: string[];
  dimensions: number;
  /** the texts are chunk inputs, prepared with this cap and hashed before they are embedded */
  maxChars?: number;
}

export type LocalEmbedReply =
  | { id: number; vectors: Float32Array[]; hashes?: string[] }
  | { id: number; error: string };

parentPort?.on('message', (job: LocalEmbedJob) => {
  let vectors: Float32Array[];
  let hashes: string[] | undefined;
  try {
    let texts = job.texts;
    if (job.maxChars !== undefined) ({ texts, hashes } = prepareChunkInputs(texts, job.maxChars));
    vectors = embedLocalHashMany(texts, job.dimensions);
  } catch (error) {
    const reply: LocalEmbedReply = { id: job.id, error: (error as Error)?.message ?? String(error) };
    parentPort?.postMessage(reply);
    return;
  }
  const reply: LocalEmbedReply = { id: job.id, vectors, hashes };
  // the views share one buffer: moved once, and they arrive as views of it
  parentPort?.postMessage(reply, vectors.length > 0 ? [vectors[0]!.buffer as ArrayBuffer] : []);
});
