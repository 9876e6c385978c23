import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * Gives the calling thread a lower scheduling priority (a higher nice value) than the rest of the process, where
 * the operating system has per-thread priorities (Linux: /proc/thread-self names the thread, and setpriority on a
 * thread id applies to that thread alone). Elsewhere it does nothing. Returns whether it took effect.
 *
 * For background threads that use whatever CPU the main thread leaves: on a machine with fewer cores than busy
 * threads, the main thread, which feeds them and stores their results, then keeps its core when it wakes them.
 */
export function lowerThreadPriority(nice: number): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false; // no /proc (macOS, Windows), or not permitted: the thread keeps the process's priority
  }
}
