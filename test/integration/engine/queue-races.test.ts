import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import {
  claimQueueItems,
  completeQueueItem,
  enqueue,
  failQueueItem,
  retryFailedItems,
} from '../../../src/engine/queue.js';
import { type RunOptions, runPipeline } from '../../../src/engine/runner.js';
import { sha256 } from '../../../src/util/hash.js';
import { sqlTime } from '../../../src/util/time.js';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

// contents of different lengths: each write changes the file's size, so every scan sees it changed
const FIRST = '# Moderation\n\nDie Moderation einer Gruppe braucht klare Regeln.\n';
const SECOND = '# Moderation\n\nZweite Fassung: Zeitwächter, Protokoll und eine klare Rednerliste.\n';
const THIRD =
  '# Moderation\n\nDritte Fassung: die Gruppe moderiert sich selbst, reihum, mit Zeitwächter und Protokoll.\n';
const OTHER = '# Feedback\n\nFeedback wird konkret und zeitnah gegeben.\n';

/**
 * Queue items and versions of a file that changes, goes or is reprocessed while items of it are queued: a deleted
 * file leaves no current document, one content of a file is one version, a forced item is forced whoever claims
 * it, and a process that closes its own item does not take that for a lost lease.
 */
for (const backend of testBackends()) {
  describe(`queued files that change meanwhile (${backend})`, () => {
    let setup: TestSetup;
    let engine: Engine;
    beforeEach(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      engine = await setup.open();
      await insertPipeline(engine.dbs.content.sql, 'chunks', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk' },
      ]);
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const db = () => engine.dbs.content.sql;
    const pipeline = (more: Partial<RunOptions> = {}) =>
      planPipeline(db(), engine.registry, 'chunks').then((plan) =>
        runPipeline(engine, { plan, concurrency: 2, ...more }),
      );
    /** `cpe run` */
    const run = (source: string) => pipeline({ sourceDir: source });
    /** `cpe scan`: queues, processes nothing */
    const scan = (source: string) => pipeline({ sourceDir: source, limit: 0 });
    /** `cpe process` (and `cpe worker`): what is queued, without --force */
    const processQueue = (more: Partial<RunOptions> = {}) => pipeline(more);
    const versionsOf = async (file: string) =>
      (
        await db().query<Record<string, any>>(
          `SELECT id, version, status, is_latest, content_hash,
             (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
           FROM documents d WHERE source_path = ? ORDER BY version`,
          [file],
        )
      ).map((r) => ({
        version: Number(r.version),
        status: r.status as string,
        latest: Number(r.is_latest),
        chunks: Number(r.chunks),
        hash: r.content_hash as string,
        id: Number(r.id),
      }));
    const queueOf = (file: string) =>
      db().query<{ id: number; action: string; status: string; last_error: string | null; forced: number }>(
        'SELECT id, action, status, last_error, forced FROM pipeline_queue WHERE path_hash = ? ORDER BY id',
        [sha256(file)],
      );

    it('deletes every version of a file that changed and then went before its update was processed', async () => {
      const source = makeSourceFolder({ 'a.md': FIRST, 'b.md': OTHER });
      const file = path.join(source, 'a.md');
      expect(await run(source)).to.include({ docsDone: 2, docsFailed: 0 });
      writeFileSync(file, SECOND);
      await scan(source); // its update queued
      rmSync(file);
      await scan(source); // its deletion queued
      const processed = await processQueue();
      expect(processed, JSON.stringify(processed.failures)).to.include({ status: 'ok', docsFailed: 0 });
      // version 2 was made from the update queued before the deletion: it went with the file
      expect((await versionsOf(file)).map((v) => [v.version, v.status, v.latest, v.chunks])).to.deep.equal([
        [1, 'deleted', 0, 0],
        [2, 'deleted', 0, 0],
      ]);
      expect((await queueOf(file)).map((q) => [q.action, q.status])).to.deep.equal([
        ['new', 'done'],
        ['update', 'done'],
        ['delete', 'done'],
      ]);
      const [other] = await versionsOf(path.join(source, 'b.md'));
      expect([other!.status, other!.latest]).to.deep.equal(['done', 1]);
    });

    it('ends with the new content of a file that went and came back with it before its items were processed', async () => {
      const source = makeSourceFolder({ 'a.md': FIRST });
      const file = path.join(source, 'a.md');
      await run(source);
      writeFileSync(file, SECOND);
      await scan(source);
      rmSync(file);
      await scan(source);
      writeFileSync(file, THIRD);
      await scan(source);
      const processed = await processQueue();
      expect(processed, JSON.stringify(processed.failures)).to.include({ docsFailed: 0 });
      const versions = await versionsOf(file);
      expect(versions.map((v) => [v.version, v.status, v.latest])).to.deep.equal([
        [1, 'done', 0],
        [2, 'done', 0],
        [3, 'done', 1],
      ]);
      expect(versions[2]!.hash).to.equal(sha256(THIRD));
      expect(versions[2]!.chunks).to.be.above(0);
      expect(versions.slice(0, 2).map((v) => v.chunks)).to.deep.equal([0, 0]);
      const deletion = (await queueOf(file)).find((q) => q.action === 'delete');
      expect(deletion).to.include({ status: 'done', last_error: 'the file is there again: not deleted' });
    });

    it('closes what was queued of a file before its deletion, when the deletion comes first', async () => {
      const source = makeSourceFolder({ 'a.md': FIRST });
      const file = path.join(source, 'a.md');
      await run(source);
      // gone for a moment (an editor saving it): a deletion queued, and skipped, as the file is back then
      rmSync(file);
      await scan(source);
      writeFileSync(file, FIRST);
      await processQueue();
      // changed, then gone: the update is queued after the deletion's row, which comes back (same file, content
      // and action) with its older id, so that it is claimed first
      writeFileSync(file, SECOND);
      await scan(source);
      rmSync(file);
      await scan(source);
      const queue = await queueOf(file);
      const deletion = queue.find((q) => q.action === 'delete')!;
      const update = queue.find((q) => q.action === 'update')!;
      expect([deletion.status, update.status]).to.deep.equal(['pending', 'pending']);
      expect(Number(deletion.id)).to.be.below(Number(update.id));
      // the deletion alone, then the rest
      expect(await processQueue({ concurrency: 1, limit: 1 })).to.include({ docsDone: 1 });
      expect(await processQueue()).to.include({ docsTotal: 0 });
      expect((await versionsOf(file)).map((v) => [v.version, v.status, v.latest])).to.deep.equal([
        [1, 'deleted', 0],
      ]);
      const [closed] = (await queueOf(file)).filter((q) => q.action === 'update');
      expect(closed).to.include({
        status: 'done',
        last_error: `superseded: ${file} was deleted before it was processed`,
      });
    });

    it('deletes a file gone while its new item was still queued, instead of processing it from the archive', async () => {
      const source = makeSourceFolder({ 'a.md': FIRST, 'b.md': OTHER });
      const file = path.join(source, 'a.md');
      await scan(source);
      rmSync(file);
      const summary = await run(source);
      expect(summary, JSON.stringify(summary.failures)).to.include({ status: 'ok', docsFailed: 0 });
      // no current document of it (a version made from the archived bytes is deleted again)
      const versions = await versionsOf(file);
      expect(versions.filter((v) => v.status !== 'deleted' || v.latest === 1 || v.chunks > 0)).to.deep.equal(
        [],
      );
      expect((await queueOf(file)).map((q) => [q.action, q.status])).to.deep.equal([
        ['new', 'done'],
        ['delete', 'done'],
      ]);
      const [other] = await versionsOf(path.join(source, 'b.md'));
      expect([other!.status, other!.latest]).to.deep.equal(['done', 1]);
      // and so it stays
      expect((await run(source)).docsTotal).to.equal(0);
    });

    for (const together of [true, false]) {
      it(`makes one version of one content queued twice, as new and as update (${together ? 'claimed together' : 'one by one'})`, async () => {
        const source = makeSourceFolder({ 'a.md': FIRST });
        const file = path.join(source, 'a.md');
        await scan(source);
        writeFileSync(file, SECOND);
        await scan(source); // no version yet: SECOND is queued as new
        expect(await processQueue({ limit: 1 })).to.include({ docsDone: 1 });
        await scan(source); // version 1 is FIRST: SECOND is queued again, as an update
        const rest = together
          ? [await processQueue()]
          : [await processQueue({ concurrency: 1, limit: 1 }), await processQueue({ concurrency: 1 })];
        expect(rest.reduce((n, s) => n + s.docsDone, 0)).to.equal(1);
        expect(rest.reduce((n, s) => n + s.docsSkipped, 0)).to.equal(1);
        const versions = await versionsOf(file);
        expect(versions.map((v) => [v.version, v.status, v.latest])).to.deep.equal([
          [1, 'done', 0],
          [2, 'done', 1],
        ]);
        expect(versions[1]!.hash).to.equal(sha256(SECOND));
        const update = (await queueOf(file)).find((q) => q.action === 'update')!;
        expect(update.status).to.equal('done');
        expect(update.last_error).to.match(
          new RegExp(
            `^version 2 of .*a\\.md \\(document ${versions[1]!.id}, (done|processing)\\) has this content already; no other version made$`,
          ),
        );
      });
    }

    it('runs every step of a forced item whichever process claims it', async () => {
      const source = makeSourceFolder({ 'a.md': FIRST });
      const file = path.join(source, 'a.md');
      await run(source);
      const [doc] = await versionsOf(file);
      // as `cpe reprocess` queues it; a worker (no --force of its own) claims it
      await enqueue(db(), {
        path: file,
        hash: doc!.hash,
        action: 'new',
        documentId: doc!.id,
        maxAttempts: 3,
        forced: true,
      });
      const worker = await processQueue();
      expect(worker).to.include({ docsDone: 1, docsFailed: 0 });
      const steps = await engine.dbs.log.sql.query<{ step_name: string; status: string }>(
        'SELECT step_name, status FROM pipeline_step_runs WHERE run_id = ? AND document_id = ? ORDER BY id',
        [worker.runId, doc!.id],
      );
      expect(steps.map((s) => [s.step_name, s.status])).to.deep.equal([
        ['extract', 'ok'],
        ['chunk', 'ok'],
      ]);
    });

    it('keeps the force of an item that is requeued, fails or is retried; a done item requeued starts unforced', async () => {
      const item = { path: '/forced/a.md', hash: 'a'.repeat(64), action: 'update' as const, maxAttempts: 3 };
      const forcedNow = async () =>
        (await db().query<{ forced: number }>('SELECT forced FROM pipeline_queue'))[0]!;
      await enqueue(db(), item);
      expect(Number((await forcedNow()).forced)).to.equal(0);
      await enqueue(db(), { ...item, forced: true }); // merged into the pending row
      await enqueue(db(), item); // a scan queues the same content again
      expect(Number((await forcedNow()).forced)).to.equal(1);
      let [claimed] = await claimQueueItems(db(), 'w', 1, 60_000);
      expect(claimed!.forced).to.equal(true);
      // a retryable failure, then the scan again; a permanent one, then `cpe retry`
      await failQueueItem(db(), claimed!, 'w', 'down', true);
      await enqueue(db(), item);
      [claimed] = await claimQueueItems(db(), 'w', 1, 60_000);
      expect(claimed!.forced).to.equal(true);
      await failQueueItem(db(), claimed!, 'w', 'broken', false);
      expect(await retryFailedItems(db())).to.equal(1);
      [claimed] = await claimQueueItems(db(), 'w', 1, 60_000);
      expect(claimed!.forced).to.equal(true);
      // done: a later request is a new one
      await completeQueueItem(db(), claimed!.id, 'w');
      await enqueue(db(), item);
      [claimed] = await claimQueueItems(db(), 'w', 1, 60_000);
      expect(claimed!.forced).to.equal(false);
    });

    it('cpe reprocess queues its item forced, and refuses while a process works on that item', async () => {
      const source = makeSourceFolder({ 'a.md': FIRST });
      const file = path.join(source, 'a.md');
      await run(source);
      const [doc] = await versionsOf(file);
      await engine.close();
      const first = await runCli(
        ['reprocess', String(doc!.id), '--pipeline=chunks'],
        setup.env,
        undefined,
        60_000,
      );
      expect(first.code, first.stderr).to.equal(0);
      engine = await setup.open();
      const [item] = await queueOf(file);
      expect([item!.status, Number(item!.forced)]).to.deep.equal(['done', 1]);
      // a worker holds it now (it read the item before this request)
      await db().run(
        "UPDATE pipeline_queue SET status = 'processing', locked_by = 'elsewhere:1:1', locked_until = ?",
        [sqlTime(Date.now() + 60_000)],
      );
      await engine.close();
      const refused = await runCli(
        ['reprocess', String(doc!.id), '--pipeline=chunks'],
        setup.env,
        undefined,
        60_000,
      );
      engine = await setup.open();
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.contain(
        `cannot reprocess document ${doc!.id} now: its queue item ${item!.id} is being processed by elsewhere:1:1; try again when it is done`,
      );
      if (backend !== 'sqlite') return;
      // a process of this machine that was killed holding it: refused for the lease's minute, as if it still ran
      const gone = spawnSync(process.execPath, ['-e', '']).pid;
      await db().run('UPDATE pipeline_queue SET locked_by = ?', [`${os.hostname()}:${gone}:1`]);
      await engine.close();
      const taken = await runCli(
        ['reprocess', String(doc!.id), '--pipeline=chunks'],
        setup.env,
        undefined,
        60_000,
      );
      engine = await setup.open();
      expect(taken.code, taken.stderr).to.equal(0);
    });

    it('does not take an item it has just completed for a lost lease', async () => {
      await engine.close();
      engine = await setup.open({ leaseSeconds: 5 });
      const source = makeSourceFolder({ 'a.md': FIRST });
      const file = path.join(source, 'a.md');
      await run(source);
      writeFileSync(file, SECOND);
      // the completion of version 2 commits, then retracts version 1 (its points first): slowly, past a heartbeat
      // (every 1.7 s with a 5 s lease) and the time the lease would run out
      const vectors = engine.providers.vectors.bind(engine.providers);
      engine.providers.vectors = async () => {
        await new Promise((resolve) => setTimeout(resolve, 6000));
        return vectors();
      };
      const summary = await run(source);
      expect(summary).to.include({ status: 'ok', docsDone: 1, docsFailed: 0 });
      const warnings = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn'",
        [summary.runId],
      );
      expect(warnings.map((w) => w.message)).to.deep.equal([]);
      expect((await versionsOf(file)).map((v) => [v.version, v.latest, v.chunks > 0])).to.deep.equal([
        [1, 0, false],
        [2, 1, true],
      ]);
    });
  });
}
