/**
 * How much faster this machine does N equal pieces of CPU work on N threads than one after the other: 2.0 on
 * two free cores, less when the cores are shared with other machines (a cloud VM's virtual CPUs) or busy. cpe
 * spreads an ingestion over the cores (embedding workers beside the main thread), LangChain.js and LlamaIndex.TS
 * run on one, so the ingestion ratios depend on this figure; it is measured in the same run and printed with them.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { median } from './stats.js';

// a fixed piece of integer and floating-point work (~0.2 s on the machines this was written on)
const WORK = `
const { parentPort } = require('node:worker_threads');
let h = 0x811c9dc5, x = 0;
for (let i = 0; i < 60_000_000; i++) { h = Math.imul(h ^ i, 0x01000193); x += (h >>> 16) * 1e-9; }
parentPort.postMessage(x);
`;

const runOnThreads = async (threads: number): Promise<number> => {
  const started = performance.now();
  await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<void>((resolve, reject) => {
          const worker = new Worker(WORK, { eval: true });
          worker.once('message', () => resolve());
          worker.once('error', reject);
        }),
    ),
  );
  return performance.now() - started;
};

export interface Parallelism {
  threads: number;
  /** N × (time of one piece alone) / (time of N pieces at once), median of the rounds */
  speedup: number;
}

export async function measureParallelism(threads = availableParallelism(), rounds = 3): Promise<Parallelism> {
  const speedups: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const one = await runOnThreads(1);
    const all = await runOnThreads(threads);
    speedups.push((threads * one) / all);
  }
  return { threads, speedup: median(speedups) };
}
