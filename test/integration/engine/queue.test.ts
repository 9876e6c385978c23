import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { claimQueueItems, enqueue, failQueueItem, retryFailedItems } from '../../../src/engine/queue.js';
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
        let [claimed] = await claimQueueItems(db, 'w', 5, 60000);
        expect(claimed!.attempts).to.equal(1);
        expect(await failQueueItem(db, claimed!, 'w', 'boom', true)).to.equal('failed');
        await db.run('UPDATE pipeline_queue SET next_attempt_at = ?', ['2000-01-01 00:00:00.000']);
        [claimed] = await claimQueueItems(db, 'w', 5, 60000);
        expect(claimed!.attempts).to.equal(2);
        expect(await failQueueItem(db, claimed!, 'w', 'boom again', true)).to.equal('dead');
        expect(await claimQueueItems(db, 'w', 5, 60000)).to.deep.equal([]);
        expect(await retryFailedItems(db)).to.equal(1);
        [claimed] = await claimQueueItems(db, 'w', 5, 60000);
        expect(claimed!.attempts).to.equal(1);
        expect(claimed!.last_error).to.equal('boom again');
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
