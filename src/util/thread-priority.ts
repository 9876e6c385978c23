import { readdirSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The calling thread's id where Linux /proc/thread-self names it; undefined elsewhere. */
function ownThreadId(): number | undefined {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Gives the calling thread a lower scheduling priority (a higher nice value) than the rest of the process, where
 * the operating system has per-thread priorities (Linux: /proc/thread-self names the thread, and setpriority on a
 * thread id applies to that thread alone). Elsewhere it does nothing. Returns whether it took effect.
 *
 * For background threads that use whatever CPU the main thread leaves: on a machine with fewer cores than busy
 * threads, the main thread, which feeds them and stores their results, then keeps its core when it wakes them.
 */
export function lowerThreadPriority(nice: number): boolean {
  const tid = ownThreadId();
  if (tid === undefined) return false;
  try {
    setPriority(tid, nice);
    return true;
  } catch {
    return false; // not permitted: the thread keeps the process's priority
  }
}

/**
 * Lowers every other thread of the process to at least `nice` (never raises one): V8's compiler and
 * garbage-collector threads, libuv's pool, cpe's own background threads. The calling thread and the process's
 * main thread keep theirs. Linux only (threads listed in /proc/self/task); elsewhere it does nothing. A thread
 * started later keeps the priority it starts with. Returns how many threads it lowered.
 */
export function lowerOtherThreads(nice: number): number {
  const own = ownThreadId();
  if (own === undefined) return 0;
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  let lowered = 0;
  for (const name of tids) {
    const tid = Number(name);
    if (tid === own || tid === process.pid) continue;
    try {
      if (getPriority(tid) >= nice) continue;
      setPriority(tid, nice);
      lowered++;
    } catch {
      // the thread ended meanwhile, or changing it is not permitted: it keeps its priority
    }
  }
  return lowered;
}
