/**
 * The benches' clock around a timed piece of work (an ingestion pass, a chunking round, a bulk write): wall time,
 * and the CPU time of the whole process meanwhile (all threads: cpe's embedding threads and V8's compiler and GC
 * helpers count, as they take cores from the work). CPU time shows how much work was done, wall time how long
 * it took on this machine's cores, and only wall time counts the time spent waiting for a core on a busy machine.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface Timed<T> {
  value: T;
  ms: number;
  cpuMs: number;
  /**
   * CPU time of the main thread alone (where Linux tells it): cpuMs less this is what the other threads did
   * (cpe's embedding threads, V8's compiler and collector helpers, SQLite's checkpoint thread)
   */
  mainCpuMs?: number;
}

/** The calling process's main thread's time on a core so far, in ns (Linux: its schedstat); undefined elsewhere. */
function mainThreadCpuNs(): number | undefined {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return undefined;
  }
}

export async function timed<T>(fn: () => Promise<T>): Promise<Timed<T>> {
  const cpu = process.cpuUsage();
  const mainBefore = mainThreadCpuNs();
  const started = performance.now();
  const value = await fn();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const mainAfter = mainThreadCpuNs();
  const mainCpuMs =
    mainBefore !== undefined && mainAfter !== undefined ? (mainAfter - mainBefore) / 1e6 : undefined;
  return { value, ms, cpuMs: (used.user + used.system) / 1000, mainCpuMs };
}
