import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import {
  claimQueueItems,
  enqueue,
  failQueueItem,
  releaseQueueItem,
  retryFailedItems,
  runsAlone,
  startQueueItem,
} from '../../../src/engine/queue.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { projectRoot } from '../../helpers/cli.js';

function claimInChild(name: string, startAt: number, env: NodeJS.ProcessEnv): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(projectRoot, 'test/helpers/claim-worker.ts'), name, String(startAt)],
      { env },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${name} exited ${code}: ${err}`)),
    );
  });
}

for (const backend of testBackends()) {
  describe(`the queue (${backend})`, function () {
    this.timeout(120000);
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => setup?.cleanup());

    it('lets a second claim take the free items while a first one holds its own (few pending among many done)', async function () {
      // SQLite claims in one statement under its write lock: there is no claim beside another to look at
      if (backend !== 'mysql') this.skip();
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        // a queue as it looks after a while: thousands of items done, a small batch pending
        for (let start = 0; start < 5000; start += 500) {
          const rows = Array.from({ length: 500 }, (_, k) => start + k);
          await db.run(
            `INSERT INTO pipeline_queue (path, path_hash, hash, action, status, max_attempts, created_at, updated_at)
             VALUES ${rows.map(() => "(?, ?, ?, 'new', 'done', 3, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')").join(', ')}`,
            rows.flatMap((n) => [`/done/${n}.md`, String(n).padStart(64, '0'), 'h'.repeat(64)]),
          );
        }
        for (let i = 0; i < 40; i++)
          await enqueue(db, {
            path: `/pending/f${i}.md`,
            hash: 'p'.repeat(64),
            action: 'new',
            maxAttempts: 3,
          });
        await db.run('ANALYZE TABLE pipeline_queue');
        // the first claim's transaction stays open while the second claims on another connection
        const [first, second] = await db.transaction(async (tx) => {
          const mine = await claimQueueItems(tx, 'w1', 20, 60_000);
          const theirs = await claimQueueItems(db, 'w2', 20, 60_000);
          return [mine, theirs];
        });
        expect(first).to.have.length(20);
        expect(second, 'the second claim found the 20 free items').to.have.length(20);
        expect(new Set([...first, ...second].map((item) => item.id)).size).to.equal(40);
      } finally {
        await engine.close();
      }
    });

    it('never gives one item to two processes claiming from one queue of 200 items', async () => {
      const engine = await setup.open();
      for (let i = 0; i < 200; i++) {
        await enqueue(engine.dbs.content.sql, {
          path: `/claims/f${i}.md`,
          hash: 'h'.repeat(64),
          action: 'new',
          maxAttempts: 3,
        });
      }
      await engine.close();
      const startAt = Date.now() + 15000; // both processes are up by then and start claiming together
      const [a, b] = await Promise.all([
        claimInChild('A', startAt, setup.env),
        claimInChild('B', startAt, setup.env),
      ]);
      const all = [...a, ...b];
      expect(all).to.have.length(200);
      expect(new Set(all).size).to.equal(200);
      expect(a.length, 'both processes got work').to.be.greaterThan(0);
      expect(b.length, 'both processes got work').to.be.greaterThan(0);
    });

    it('keeps one row per (path, hash, action), counts attempts, goes dead after max attempts, and retry requeues', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      try {
        const item = { path: '/q/a.md', hash: 'a'.repeat(64), action: 'new' as const, maxAttempts: 2 };
        await enqueue(db, item);
        await enqueue(db, item);
        expect(await db.query('SELECT id FROM pipeline_queue')).to.have.length(1);
        /** claims the item and starts it, as the runner does: the start counts the attempt */
        const claimAndStart = async () => {
          const [claimed] = await claimQueueItems(db, 'w', 5, 60000);
          expect(claimed!.attempts, 'a claim counts no attempt').to.equal(attempts);
          expect(await startQueueItem(db, claimed!.id, 'w')).to.equal(true);
          attempts++;
          return { ...claimed!, attempts };
        };
        let attempts = 0;
        expect(await failQueueItem(db, await claimAndStart(), 'w', 'boom', true)).to.equal('failed');
        await db.run('UPDATE pipeline_queue SET next_attempt_at = ?', ['2000-01-01 00:00:00.000']);
        expect(await failQueueItem(db, await claimAndStart(), 'w', 'boom again', true)).to.equal('dead');
        expect(await claimQueueItems(db, 'w', 5, 60000)).to.deep.equal([]);
        expect(await retryFailedItems(db)).to.equal(1);
        attempts = 0;
        const claimed = await claimAndStart();
        expect(claimed.attempts).to.equal(1);
        expect(claimed.last_error).to.equal('boom again');
      } finally {
        await engine.close();
      }
    });

    it('counts an attempt only for an item that starts, only while its worker holds it, and says whose items it took over', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const attempts = async () =>
        (await db.query<{ attempts: number }>('SELECT attempts FROM pipeline_queue ORDER BY id')).map((r) =>
          Number(r.attempts),
        );
      try {
        for (const name of ['a', 'b', 'c'])
          await enqueue(db, { path: `/q/${name}.md`, hash: name.repeat(64), action: 'new', maxAttempts: 3 });
        // a worker claims all three and starts the first; it dies, its leases run out
        const claimed = await claimQueueItems(db, 'dead-worker', 3, 1);
        expect(claimed.map((c) => c.takenFrom)).to.deep.equal([undefined, undefined, undefined]);
        expect(await startQueueItem(db, claimed[0]!.id, 'dead-worker')).to.equal(true);
        await new Promise((r) => setTimeout(r, 20));
        const taken = await claimQueueItems(db, 'live-worker', 3, 60000);
        expect(taken.map((t) => t.attempts)).to.deep.equal([1, 0, 0]);
        expect(taken.map((t) => t.takenFrom)).to.deep.equal(Array(3).fill('dead-worker'));
        // the one that had started may be what ended its process: it runs alone
        expect(taken.map(runsAlone)).to.deep.equal([true, false, false]);
        // the dead worker's lease is gone: it cannot count an attempt any more
        expect(await startQueueItem(db, taken[1]!.id, 'dead-worker')).to.equal(false);
        expect(await startQueueItem(db, taken[1]!.id, 'live-worker')).to.equal(true);
        // handed back: a started item's attempt is given back, an unstarted one has none to give
        expect(await releaseQueueItem(db, taken[1]!.id, 'live-worker', true)).to.equal(true);
        expect(await releaseQueueItem(db, taken[2]!.id, 'live-worker', false)).to.equal(true);
        expect(await attempts()).to.deep.equal([1, 0, 0]);
        // claimed again from the queue (not from a lease): nobody's
        const again = await claimQueueItems(db, 'live-worker', 3, 60000);
        expect(again.map((t) => t.takenFrom)).to.deep.equal([undefined, undefined]);
      } finally {
        await engine.close();
      }
    });

    it('takes over an expired lease', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      try {
        await enqueue(db, { path: '/q/b.md', hash: 'b'.repeat(64), action: 'new', maxAttempts: 3 });
        const [first] = await claimQueueItems(db, 'dead-worker', 1, 1);
        await new Promise((r) => setTimeout(r, 20));
        const [second] = await claimQueueItems(db, 'live-worker', 1, 60000);
        expect(second!.id).to.equal(first!.id);
        expect(second!.locked_by).to.equal('live-worker');
      } finally {
        await engine.close();
      }
    });
  });
}
