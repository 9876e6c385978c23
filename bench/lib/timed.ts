/**
 * The clock every ingestion contender reads around its timed pass: wall time, and the CPU time of the whole
 * process in that pass (all threads: cpe's embedding threads and V8's compiler and GC helpers count, as they
 * take cores from the pass). CPU per pass shows how much work a contender does, wall time how long it takes
 * on this machine's cores.
 */
import { performance } from 'node:perf_hooks';

export interface Timed<T> {
  value: T;
  ms: number;
  cpuMs: number;
}

export async function timed<T>(fn: () => Promise<T>): Promise<Timed<T>> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await fn();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { value, ms, cpuMs: (used.user + used.system) / 1000 };
}
