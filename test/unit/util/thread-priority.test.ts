import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { expect } from 'chai';
import { LocalEmbedPool, spawnLocalEmbedWorker } from '../../../src/embed/local-pool.js';
import { EMBED_THREAD_NICE } from '../../../src/embed/thread-nice.js';
import { lowerOtherThreads } from '../../../src/util/thread-priority.js';

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

  it('lowers every other thread to a nice value, never raises one, and leaves the calling thread alone', async () => {
    // a thread that lowered itself further (to 12) before, as an embedding thread does
    const worker = new Worker(
      `const { parentPort } = require('node:worker_threads');
       const { readlinkSync } = require('node:fs');
       const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
       require('node:os').setPriority(tid, 12);
       parentPort.postMessage(tid);
       setInterval(() => {}, 1000);`,
      { eval: true },
    );
    try {
      const workerTid = await new Promise<number>((resolve) => worker.once('message', resolve));
      const mainNice = threadNices().get(process.pid)!;
      const lowered = lowerOtherThreads(7);
      const after = threadNices();
      expect(after.get(process.pid)).to.equal(mainNice);
      expect(after.get(workerTid)).to.equal(12);
      const others = [...after].filter(([tid]) => tid !== process.pid);
      expect(others.length).to.be.greaterThan(1); // V8's and libuv's threads at least
      for (const [, nice] of others) expect(nice).to.be.at.least(7);
      expect(lowered).to.be.greaterThan(0);
      // again: nothing is left to lower
      expect(lowerOtherThreads(7)).to.equal(0);
    } finally {
      await worker.terminate();
    }
  });
});
