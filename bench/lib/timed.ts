/**
 * The benches' clock around a timed piece of work (an ingestion pass, a chunking round, a bulk write): wall time,
 * and the CPU time of the whole process meanwhile (all threads: cpe's embedding threads and V8's compiler and GC
 * helpers count, as they take cores from the work). CPU time shows how much work was done, wall time how long
 * it took on this machine's cores, and only wall time counts the time spent waiting for a core on a busy machine.
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
