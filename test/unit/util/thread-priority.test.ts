import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { LocalEmbedPool, spawnLocalEmbedWorker } from '../../../src/embed/local-pool.js';
import { EMBED_THREAD_NICE } from '../../../src/embed/thread-nice.js';

/** nice value of each thread of this process, by thread id (Linux /proc) */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // fields after the command name: state is field 3, nice field 19
      nices.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // the thread ended meanwhile
    }
  }
  return nices;
}

describe('thread priorities', () => {
  before(function () {
    if (!existsSync('/proc/thread-self')) this.skip(); // per-thread priorities are read and set through Linux /proc
  });

  it('embedding workers run at a lower priority than the main thread, which keeps its own', async () => {
    const before = threadNices();
    const pool = new LocalEmbedPool({ size: 1, spawn: spawnLocalEmbedWorker });
    try {
      await pool.embed(['Der Arbeitgeber trägt die Kosten der Maßnahme.'], 1024);
      const added = [...threadNices()].filter(([tid]) => !before.has(tid));
      expect(added.map(([, nice]) => nice)).to.include(EMBED_THREAD_NICE);
      expect(threadNices().get(process.pid)).to.equal(before.get(process.pid));
      expect(EMBED_THREAD_NICE).to.be.greaterThan(before.get(process.pid)!);
    } finally {
      await pool.close();
    }
  });
});
