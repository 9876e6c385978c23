import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { type RunOptions, runPipeline } from '../../../src/engine/runner.js';
import { sqlTime } from '../../../src/util/time.js';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

/** Markdown of more than INLINE_ARCHIVE_BYTES: archived as a file in the data folder, not in SQL */
const LARGE = `# Groß\n\n${'Ein Absatz über Moderation und Feedback in Gruppen.\n\n'.repeat(24_000)}`;

/**
 * Leases that run out while a process still works on its items: a step that holds the event loop past the lease,
 * another process that takes an item over (the work is not lost: that process does it), and a taken-over version
 * whose archive file is in the first process's data folder.
 */
for (const backend of testBackends()) {
  describe(`lost leases (${backend})`, function () {
    this.timeout(120_000);
    let setup: TestSetup;
    let engine: Engine;
    beforeEach(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      engine = await setup.open({ leaseSeconds: 5 });
      await insertPipeline(engine.dbs.content.sql, 'spin', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk', dependsOn: ['extract'] },
        // busy for longer than the 5 s lease: no heartbeat, no timer runs meanwhile
        { name: 'work', type: 'work', config: { ms: 7000 }, dependsOn: ['chunk'] },
      ]);
      await insertPipeline(engine.dbs.content.sql, 'taken', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk', dependsOn: ['extract'] },
        { name: 'take', type: 'take_lease', dependsOn: ['chunk'] },
      ]);
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const db = () => engine.dbs.content.sql;
    const pipeline = (on: Engine, name: string, more: Partial<RunOptions> = {}) =>
      planPipeline(on.dbs.content.sql, on.registry, name).then((plan) =>
        runPipeline(on, { plan, concurrency: 2, onLog: () => undefined, ...more }),
      );
    const queue = async () =>
      (
        await db().query<Record<string, any>>(
          'SELECT path, status, attempts, locked_by, last_error FROM pipeline_queue ORDER BY id',
        )
      ).map((r) => ({
        file: path.basename(r.path),
        status: r.status,
        attempts: Number(r.attempts),
        lockedBy: r.locked_by,
        error: r.last_error,
      }));
    const documents = async () =>
      (
        await db().query<Record<string, any>>(
          'SELECT source_path, status, is_latest FROM documents ORDER BY id',
        )
      ).map((r) => [path.basename(r.source_path), r.status, Number(r.is_latest)]);
    /** the process that holds the items now ends without finishing them: its leases run out */
    const elsewhereEnds = () =>
      db().run("UPDATE pipeline_queue SET locked_until = ? WHERE locked_by = 'elsewhere:1:1'", [
        sqlTime(Date.now() - 1000),
      ]);

    it('finishes items whose steps held the event loop past the lease, instead of claiming them again meanwhile', async () => {
      const source = makeSourceFolder({ 'a.md': '# A\n\nText a.\n', 'b.md': '# B\n\nText b.\n' });
      const summary = await pipeline(engine, 'spin', { sourceDir: source });
      expect(summary).to.include({
        status: 'ok',
        docsTotal: 2,
        docsDone: 2,
        docsFailed: 0,
        docsTakenOver: 0,
      });
      expect((await queue()).map((q) => [q.file, q.status, q.attempts, q.lockedBy])).to.deep.equal([
        ['a.md', 'done', 1, null],
        ['b.md', 'done', 1, null],
      ]);
      expect(await documents()).to.deep.equal([
        ['a.md', 'done', 1],
        ['b.md', 'done', 1],
      ]);
    });

    it('says which items another process took over and leaves them to it; the next run takes them if it ends', async () => {
      const source = makeSourceFolder({ 'a.md': '# A\n\nText a.\n' });
      const summary = await pipeline(engine, 'taken', { sourceDir: source });
      expect(summary).to.deep.include({
        status: 'ok',
        docsTotal: 1,
        docsDone: 0,
        docsFailed: 0,
        docsSkipped: 0,
        docsTakenOver: 1,
        takenOver: [{ path: path.join(source, 'a.md'), documentId: 1 }],
      });
      // untouched: the other process holds it
      expect((await queue()).map((q) => [q.status, q.lockedBy])).to.deep.equal([
        ['processing', 'elsewhere:1:1'],
      ]);
      await elsewhereEnds();
      const next = await pipeline(engine, 'taken', {});
      expect(next).to.include({ status: 'ok', docsDone: 1, docsTakenOver: 0 });
      expect((await queue()).map((q) => [q.status, q.lockedBy])).to.deep.equal([['done', null]]);
      expect(await documents()).to.deep.equal([['a.md', 'done', 1]]);
    });

    it('claims an item back from a process that took it over and ended only once its own attempt has ended', async () => {
      await insertPipeline(db(), 'taken-ended', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk', dependsOn: ['extract'] },
        { name: 'take', type: 'take_lease', config: { ended: true }, dependsOn: ['chunk'] },
      ]);
      const source = makeSourceFolder({ 'a.md': '# A\n\nText a.\n' });
      const summary = await pipeline(engine, 'taken-ended', { sourceDir: source });
      expect(summary).to.include({
        status: 'ok',
        docsTotal: 1,
        docsDone: 1,
        docsFailed: 0,
        docsTakenOver: 0,
      });
      expect((await queue()).map((q) => [q.status, q.lockedBy])).to.deep.equal([['done', null]]);
      expect(await documents()).to.deep.equal([['a.md', 'done', 1]]);
    });

    it('gives up a document that kills its process every time, not the one that process had claimed ahead', async () => {
      await insertPipeline(db(), 'killing', [
        { name: 'detect', type: 'detect' },
        { name: 'crash', type: 'kills_process', config: { file: 'a.md' } },
      ]);
      const files = ['a.md', 'b.md', 'c.md', 'd.md'];
      const source = makeSourceFolder(
        Object.fromEntries(files.map((f) => [f, `# ${f}\n\nText von ${f}.\n`])),
      );
      // one slot: a.md is claimed with b.md a slot's worth ahead; a.md "kills" the process holding both
      const killed = async () => {
        await db().run("UPDATE pipeline_queue SET locked_until = ? WHERE locked_by = 'killed:1:1'", [
          sqlTime(Date.now() - 1000),
        ]);
        return pipeline(engine, 'killing', { sourceDir: source, concurrency: 1 });
      };
      const first = await pipeline(engine, 'killing', { sourceDir: source, concurrency: 1 });
      expect(first).to.include({ docsDone: 2, docsFailed: 0, docsTakenOver: 2 });
      // the next processes take both over, and die the same way
      for (let i = 0; i < 2; i++) expect(await killed()).to.include({ docsDone: 0, docsTakenOver: 2 });
      expect((await queue()).map((q) => [q.file, q.status, q.attempts, q.lockedBy])).to.deep.equal([
        ['a.md', 'processing', 3, 'killed:1:1'],
        // claimed ahead three times, never started
        ['b.md', 'processing', 0, 'killed:1:1'],
        ['c.md', 'done', 1, null],
        ['d.md', 'done', 1, null],
      ]);
      // the fourth gives a.md up, and does b.md
      expect(await killed()).to.include({ docsDone: 1, docsFailed: 1, docsTakenOver: 0 });
      expect((await queue()).map((q) => [q.file, q.status, q.attempts, q.error])).to.deep.equal([
        [
          'a.md',
          'dead',
          3,
          'given up: the process working on it ended 3 times before it was done (crashed or killed)',
        ],
        ['b.md', 'done', 1, null],
        ['c.md', 'done', 1, null],
        ['d.md', 'done', 1, null],
      ]);
      // the next run over the folder says that a file of it is given up, and how to bring it back
      const warnings: string[] = [];
      const next = await pipeline(engine, 'killing', {
        sourceDir: source,
        onLog: (level, line) => level === 'warn' && warnings.push(line),
      });
      expect(next).to.include({ status: 'ok', docsTotal: 0 });
      expect(warnings).to.include(
        'warn: 1 file(s) of this folder were given up after their attempts ran out and are not processed again until they change: `cpe status` names them, `cpe retry` queues them again',
      );
    });

    it('processes the items taken over from a killed process alone, so that the one killing it charges no other', async () => {
      await insertPipeline(db(), 'killing-beside', [
        { name: 'detect', type: 'detect' },
        // b.md "kills" the process 50 ms after it starts; a.md, started beside it, is busy for 300 ms: its attempt
        // has started, and is lost with it
        { name: 'before', type: 'sleep', config: { ms: 50, files: ['b.md'] } },
        { name: 'crash', type: 'kills_process', config: { file: 'b.md' }, dependsOn: ['before'] },
        { name: 'after', type: 'sleep', config: { ms: 300, files: ['a.md'] }, dependsOn: ['crash'] },
      ]);
      const files = ['a.md', 'b.md', 'c.md', 'd.md'];
      const source = makeSourceFolder(
        Object.fromEntries(files.map((f) => [f, `# ${f}\n\nText von ${f}.\n`])),
      );
      const run = () => pipeline(engine, 'killing-beside', { sourceDir: source, concurrency: 2 });
      const killed = async () => {
        await db().run("UPDATE pipeline_queue SET locked_until = ? WHERE locked_by = 'killed:1:1'", [
          sqlTime(Date.now() - 1000),
        ]);
        return run();
      };
      const attempts = async () => (await queue()).map((q) => [q.file, q.status, q.attempts]);
      expect(await run()).to.include({ docsDone: 0, docsTakenOver: 4 });
      expect(await attempts()).to.deep.equal([
        ['a.md', 'processing', 1],
        ['b.md', 'processing', 1],
        ['c.md', 'processing', 0],
        ['d.md', 'processing', 0],
      ]);
      // taken over: a.md and b.md had started, either may be what killed the process. Each runs alone: a.md first,
      // done and committed before b.md starts (b.md's kill 50 ms into it would otherwise lose a.md's completion,
      // held back for company, and charge it again); b.md kills the process again, charging itself only
      expect(await killed()).to.include({ docsDone: 1, docsTakenOver: 3 });
      expect(await killed()).to.include({ docsDone: 0, docsTakenOver: 3 });
      expect(await attempts()).to.deep.equal([
        ['a.md', 'done', 2],
        ['b.md', 'processing', 3],
        ['c.md', 'processing', 0],
        ['d.md', 'processing', 0],
      ]);
      // the run log (ki_dev) says why
      const said = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE message LIKE '%processed alone%' ORDER BY id",
      );
      const alone = (file: string) =>
        `${file}: taken over from killed:1:1, which ended while working on it; processed alone, so that a crash it causes again charges no other document`;
      expect(said.map((r) => path.basename(r.message))).to.deep.equal(['a.md', 'b.md', 'b.md'].map(alone));
      // b.md is given up; the others are done
      expect(await killed()).to.include({ docsDone: 2, docsFailed: 1, docsTakenOver: 0 });
      expect(await attempts()).to.deep.equal([
        ['a.md', 'done', 2],
        ['b.md', 'dead', 3],
        ['c.md', 'done', 1],
        ['d.md', 'done', 1],
      ]);
    });

    it('processes the items it takes back while its earlier claims of them still wait or start', async () => {
      await insertPipeline(db(), 'killing-ended', [
        { name: 'detect', type: 'detect' },
        { name: 'crash', type: 'kills_process', config: { file: 'a.md', ended: true } },
      ]);
      const files = ['a.md', 'b.md', 'c.md', 'd.md', 'e.md', 'f.md'];
      const source = makeSourceFolder(
        Object.fromEntries(files.map((f) => [f, `# ${f}\n\nText von ${f}.\n`])),
      );
      // every start of a.md loses every item of the run at once, and its next claims take them back (a.md's own
      // outcome depends on when they do: not checked)
      await pipeline(engine, 'killing-ended', { sourceDir: source, concurrency: 1 });
      const rest = files.slice(1);
      const items = (await queue()).filter((q) => rest.includes(q.file));
      expect(items.map((q) => [q.file, q.status, q.error])).to.deep.equal(rest.map((f) => [f, 'done', null]));
      expect((await documents()).filter(([file]) => rest.includes(file as string))).to.deep.equal(
        rest.map((f) => [f, 'done', 1]),
      );
    });

    if (backend === 'mysql') {
      describe('a process with another data folder', () => {
        let otherDir: string;
        let other: Engine | undefined;
        beforeEach(() => {
          otherDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-other-data-'));
        });
        afterEach(async () => {
          await other?.close();
          other = undefined;
          rmSync(otherDir, { recursive: true, force: true });
        });
        /** a.md's version made by this engine (its large file archived in this data folder), then taken over */
        const takenOverLarge = async () => {
          const source = makeSourceFolder({ 'large.md': LARGE });
          await pipeline(engine, 'taken', { sourceDir: source });
          await elsewhereEnds();
          other = await setup.open({ leaseSeconds: 5, dataDir: otherDir });
          return path.join(source, 'large.md');
        };

        it('processes a taken-over version from its source file when its archive file is in the other data folder', async () => {
          await takenOverLarge();
          const summary = await pipeline(other!, 'taken', {});
          expect(summary).to.include({ status: 'ok', docsDone: 1, docsFailed: 0 });
          expect(await documents()).to.deep.equal([['large.md', 'done', 1]]);
        });

        it('fails it naming the archive copy it lacks when the source file has changed since', async () => {
          const file = await takenOverLarge();
          writeFileSync(file, `${LARGE}Nachtrag.\n`);
          const summary = await pipeline(other!, 'taken', {});
          expect(summary).to.include({ status: 'ok', docsDone: 0, docsFailed: 1 });
          const [item] = await queue();
          expect(item!.status).to.equal('failed');
          expect(item!.error).to.match(
            /^version 1 of .*large\.md cannot be processed here: its archived copy .*cpe-other-data-.*\.md is not in this data folder's archive \(another process, with another data folder, archived it\), and the source file has changed since/,
          );
        });
      });
    }
  });
}
