import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { enqueue } from '../../../src/engine/queue.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { statusReport } from '../../../src/engine/status.js';
import { sha256 } from '../../../src/util/hash.js';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

const ALPHA = '# Alpha\n\nAlpha spricht über die Eisenhower-Matrix.\n';
const BETA = '# Beta\n\nBeta spricht über das Harvard-Konzept.\n';

for (const backend of testBackends()) {
  describe(`versions of a file across runs (${backend})`, () => {
    let setup: TestSetup;
    let engine: Engine;
    beforeEach(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      engine = await setup.open();
      await insertPipeline(engine.dbs.content.sql, 'versions', [
        { name: 'detect', type: 'detect' },
        { name: 'a', type: 'double' },
      ]);
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const run = async (source: string) =>
      runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'versions'),
        sourceDir: source,
        concurrency: 2,
      });
    const versions = () =>
      engine.dbs.content.sql.query<Record<string, any>>(
        'SELECT id, version, previous_version_id, is_latest, status, content_hash, error FROM documents ORDER BY version',
      );

    it('makes a new version, the only latest one, when the content comes back to an earlier version (A, B, A, B)', async () => {
      const source = makeSourceFolder({ 'doc.md': ALPHA });
      const file = path.join(source, 'doc.md');
      for (const content of [ALPHA, BETA, ALPHA, BETA]) {
        writeFileSync(file, content);
        const summary = await run(source);
        expect(summary.docsDone).to.be.at.most(1);
      }
      // the file is unchanged now: nothing more to do
      expect((await run(source)).docsTotal).to.equal(0);
      const rows = await versions();
      expect(rows.map((r) => [Number(r.version), Number(r.is_latest), r.status])).to.deep.equal([
        [1, 0, 'done'],
        [2, 0, 'done'],
        [3, 0, 'done'],
        [4, 1, 'done'],
      ]);
      expect(rows.slice(1).map((r) => Number(r.previous_version_id))).to.deep.equal(
        rows.slice(0, 3).map((r) => Number(r.id)),
      );
      expect(rows[3]!.content_hash).to.equal(rows[1]!.content_hash);
    });

    it('does not process a late retry of a version a newer one superseded, and says why', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({ 'doc.md': ALPHA });
      const file = path.join(source, 'doc.md');
      await run(source);
      writeFileSync(file, BETA);
      await run(source);
      // version 1's item comes back as if its retry were due (it had failed before version 2 was made)
      const [v1] = await versions();
      await db.run(
        "UPDATE pipeline_queue SET status = 'failed', next_attempt_at = '2000-01-01 00:00:00.000' WHERE document_id = ?",
        [v1!.id],
      );
      await db.run("UPDATE documents SET status = 'pending', is_latest = 0 WHERE id = ?", [v1!.id]);
      const summary = await run(source);
      expect(summary).to.include({ docsDone: 0, docsFailed: 0, docsSkipped: 1 });
      const rows = await versions();
      expect(rows.map((r) => [Number(r.version), Number(r.is_latest), r.status])).to.deep.equal([
        [1, 0, 'failed'],
        [2, 1, 'done'],
      ]);
      const reason = `version 1 of ${file} (document ${v1!.id}) is superseded by version 2`;
      expect(rows[0]!.error).to.contain(reason);
      const [item] = await db.query<Record<string, any>>(
        'SELECT status, last_error FROM pipeline_queue WHERE document_id = ?',
        [v1!.id],
      );
      expect(item!.status).to.equal('done');
      expect(item!.last_error).to.contain(reason);
    });

    it('reprocesses the latest version after a config change although a newer version of its file failed', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({ 'doc.md': ALPHA });
      await run(source);
      const [v1] = await versions();
      // version 2 of the file failed for good (its content stays in the folder; the scan does not queue it again)
      writeFileSync(path.join(source, 'doc.md'), BETA);
      await db.run(
        `INSERT INTO documents (filename, source_path, content_hash, status, version, is_latest, previous_version_id)
         VALUES ('doc.md', ?, ?, 'failed', 2, 0, ?)`,
        [path.join(source, 'doc.md'), sha256(BETA), v1!.id],
      );
      // with its queue item, failed without a retry to come: it does not replace version 1
      const [v2] = await db.query<{ id: number }>('SELECT id FROM documents WHERE version = 2');
      await enqueue(db, {
        path: path.join(source, 'doc.md'),
        hash: sha256(BETA),
        action: 'update',
        maxAttempts: 1,
      });
      await db.run(
        "UPDATE pipeline_queue SET status = 'failed', attempts = 1, document_id = ? WHERE hash = ?",
        [v2!.id, sha256(BETA)],
      );
      await db.run("UPDATE pipeline_steps SET config = '{\"value\": 3}' WHERE name = 'a'");
      const warnings: string[] = [];
      const summary = await runPipeline(engine, {
        plan: await planPipeline(db, engine.registry, 'versions'),
        concurrency: 1,
        sourceDir: source,
        onLog: (level, line) => {
          if (level === 'warn' && line.includes('failed in earlier runs')) warnings.push(line);
        },
      });
      expect(summary).to.include({ docsDone: 1, docsSkipped: 0 });
      // version 1 queued again mends nothing of version 2's failure: the run still says that it failed
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.contain('1 file(s) of this folder failed in earlier runs');
      const rows = await versions();
      expect(rows.map((r) => [Number(r.version), Number(r.is_latest), r.status])).to.deep.equal([
        [1, 1, 'done'],
        [2, 0, 'failed'],
      ]);
    });

    for (const force of [false, true])
      it(`processes only the new version of a file changed before ${force ? 'a --force run' : 'a pipeline edit'}`, async () => {
        const db = engine.dbs.content.sql;
        const source = makeSourceFolder({ 'doc.md': ALPHA, 'other.md': BETA });
        await run(source);
        const [old] = await db.query<{ id: number }>("SELECT id FROM documents WHERE filename = 'doc.md'");
        writeFileSync(path.join(source, 'doc.md'), `${ALPHA}\nNoch ein Absatz.\n`);
        if (!force) await db.run("UPDATE pipeline_steps SET config = '{\"value\": 3}' WHERE name = 'a'");
        const summary = await runPipeline(engine, {
          plan: await planPipeline(db, engine.registry, 'versions'),
          sourceDir: source,
          concurrency: 2,
          force,
        });
        // one document per file: doc.md's new version, other.md processed again
        expect(summary, JSON.stringify(summary.failures)).to.include({
          docsTotal: 2,
          docsDone: 2,
          docsFailed: 0,
        });
        // the old version, thrown away once the new one is done, got no step work
        const worked = await engine.dbs.log.sql.query<{ document_id: number }>(
          'SELECT DISTINCT document_id FROM pipeline_step_runs WHERE run_id = ? AND document_id IS NOT NULL',
          [summary.runId],
        );
        expect(worked.map((r) => Number(r.document_id))).to.not.include(Number(old!.id));
        expect(worked).to.have.length(2);
        const rows = await db.query<Record<string, any>>(
          "SELECT version, is_latest, status FROM documents WHERE filename = 'doc.md' ORDER BY version",
        );
        expect(rows.map((r) => [Number(r.version), Number(r.is_latest), r.status])).to.deep.equal([
          [1, 0, 'done'],
          [2, 1, 'done'],
        ]);
      });

    it('deletes a file gone before a --force run or a config change, instead of reprocessing it from the archive', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({ 'a.md': ALPHA, 'b.md': BETA });
      await run(source);
      const queue = () =>
        db.query<{ path: string; action: string; status: string; last_error: string | null }>(
          'SELECT path, action, status, last_error FROM pipeline_queue ORDER BY id',
        );
      const documents = () =>
        db.query<{ source_path: string; status: string; is_latest: number }>(
          'SELECT source_path, status, is_latest FROM documents ORDER BY source_path',
        );
      const force = async (force: boolean) =>
        runPipeline(engine, {
          plan: await planPipeline(db, engine.registry, 'versions'),
          sourceDir: source,
          concurrency: 4,
          force,
        });
      rmSync(path.join(source, 'a.md'));
      const forced = await force(true);
      // b.md reprocessed, a.md deleted
      expect(forced, JSON.stringify(forced.failures)).to.include({
        docsTotal: 2,
        docsDone: 2,
        docsFailed: 0,
      });
      expect(
        (await documents()).map((d) => [path.basename(d.source_path), d.status, Number(d.is_latest)]),
      ).to.deep.equal([
        ['a.md', 'deleted', 0],
        ['b.md', 'done', 1],
      ]);
      expect((await queue()).filter((q) => q.status !== 'done')).to.deep.equal([]);
      // again, and after a config change: nothing of a.md comes back
      expect(await force(true)).to.include({ docsTotal: 1, docsDone: 1, docsFailed: 0 });
      rmSync(path.join(source, 'b.md'));
      await db.run("UPDATE pipeline_steps SET config = '{\"value\": 3}' WHERE name = 'a'");
      expect(await force(false)).to.include({ docsTotal: 1, docsDone: 1, docsFailed: 0 });
      expect((await documents()).map((d) => d.status)).to.deep.equal(['deleted', 'deleted']);
      expect((await queue()).filter((q) => q.status !== 'done')).to.deep.equal([]);
    });

    it('lists a failure only until a newer version of its file is done or the file goes', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({ 'leer.md': '', 'weg.md': '', 'ok.md': ALPHA });
      const standard = async () =>
        runPipeline(engine, {
          plan: await planPipeline(db, engine.registry, 'Standard'),
          sourceDir: source,
          concurrency: 2,
        });
      const failures = async () => {
        const report = await statusReport(engine);
        return {
          failed: report.queue.failed ?? 0,
          dead: report.queue.dead ?? 0,
          listed: report.recentFailures.map((f) => path.basename(f.path)).sort(),
          documentsFailed: report.documents.failed ?? 0,
        };
      };
      const first = await standard();
      expect(first.failures.map((f) => path.basename(f.path)).sort()).to.deep.equal(['leer.md', 'weg.md']);
      expect(await failures()).to.deep.equal({
        failed: 2,
        dead: 0,
        listed: ['leer.md', 'weg.md'],
        documentsFailed: 2,
      });
      // fixed: its new version is done, and its failure is over
      writeFileSync(path.join(source, 'leer.md'), BETA);
      expect(await standard()).to.include({ docsDone: 1, docsFailed: 0 });
      expect(await failures()).to.deep.equal({ failed: 1, dead: 0, listed: ['weg.md'], documentsFailed: 1 });
      // gone: so is its failure
      rmSync(path.join(source, 'weg.md'));
      expect(await standard()).to.include({ docsDone: 1, docsFailed: 0 });
      expect(await failures()).to.deep.equal({ failed: 0, dead: 0, listed: [], documentsFailed: 0 });
      // the closed items say why
      const closed = await db.query<{ path: string; status: string; last_error: string | null }>(
        "SELECT path, status, last_error FROM pipeline_queue WHERE action <> 'delete' AND last_error IS NOT NULL ORDER BY path",
      );
      expect(closed.map((q) => [path.basename(q.path), q.status, q.last_error])).to.deep.equal([
        [
          'leer.md',
          'done',
          `superseded: version 2 of ${path.join(source, 'leer.md')} is done; it had failed: ${first.failures.find((f) => f.path.endsWith('leer.md'))!.error}`,
        ],
        [
          'weg.md',
          'done',
          `superseded: ${path.join(source, 'weg.md')} was deleted; it had failed: ${first.failures.find((f) => f.path.endsWith('weg.md'))!.error}`,
        ],
      ]);
    });

    it('tries the failed newest version of a file again with --force, the version before it staying current', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({ 'a.md': ALPHA, 'b.md': BETA });
      const file = path.join(source, 'a.md');
      const standard = async (force = false) => {
        const warnings: string[] = [];
        const summary = await runPipeline(engine, {
          plan: await planPipeline(db, engine.registry, 'Standard'),
          sourceDir: source,
          concurrency: 2,
          force,
          onLog: (level, line) => {
            if (level === 'warn' && line.includes('failed in earlier runs')) warnings.push(line);
          },
        });
        return { summary, warnings };
      };
      const versionsOfA = async () =>
        (
          await db.query<Record<string, any>>(
            'SELECT id, version, is_latest, status FROM documents WHERE source_path = ? ORDER BY version',
            [file],
          )
        ).map((r) => [Number(r.version), Number(r.is_latest), r.status]);
      const chunksOf = async (documentId: number) =>
        Number(
          (
            await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM chunks WHERE document_id = ?', [
              documentId,
            ])
          )[0]!.n,
        );
      await standard();
      const [v1] = await db.query<{ id: number }>('SELECT id FROM documents WHERE source_path = ?', [file]);
      const searched = await chunksOf(v1!.id);
      expect(searched).to.be.above(0);
      writeFileSync(file, '');
      const failed = (await standard()).summary;
      expect(failed).to.include({ docsDone: 0, docsFailed: 1 });
      const v2 = failed.failures[0]!.documentId;

      // --force tries version 2 (the bytes on disk) again, which fails again; version 1 is not processed
      const forced = await standard(true);
      expect(forced.summary, JSON.stringify(forced.summary.failures)).to.include({
        docsTotal: 2,
        docsDone: 1,
        docsFailed: 1,
        docsRequeued: 2,
        status: 'ok',
      });
      expect(forced.summary.failures.map((f) => [f.path, f.documentId])).to.deep.equal([[file, v2]]);
      expect(forced.summary.failures[0]!.error).to.contain('empty file');
      const worked = await engine.dbs.log.sql.query<{ document_id: number }>(
        'SELECT DISTINCT document_id FROM pipeline_step_runs WHERE run_id = ? AND document_id IS NOT NULL',
        [forced.summary.runId],
      );
      expect(worked.map((r) => Number(r.document_id)))
        .to.include(v2)
        .and.not.include(Number(v1!.id));
      // a failure of this run, not one of an earlier run's
      expect(forced.warnings).to.deep.equal([]);
      expect(await versionsOfA()).to.deep.equal([
        [1, 1, 'done'],
        [2, 0, 'failed'],
      ]);
      expect(await chunksOf(v1!.id)).to.equal(searched);

      // the next run processes nothing, and says so of a.md
      const next = await standard();
      expect(next.summary).to.include({ docsTotal: 0 });
      expect(next.warnings).to.have.length(1);
      expect(next.warnings[0]).to.contain('1 file(s) of this folder failed in earlier runs');

      // changed again before a --force run: its new content is processed, not version 2, whose failure is over
      writeFileSync(file, `${ALPHA}\nNoch ein Absatz.\n`);
      const changed = await standard(true);
      expect(changed.summary, JSON.stringify(changed.summary.failures)).to.include({
        docsTotal: 2,
        docsDone: 2,
        docsFailed: 0,
      });
      expect(await versionsOfA()).to.deep.equal([
        [1, 0, 'done'],
        [2, 0, 'failed'],
        [3, 1, 'done'],
      ]);
      const open = await db.query<{ path: string; status: string }>(
        "SELECT path, status FROM pipeline_queue WHERE status <> 'done'",
      );
      expect(open).to.deep.equal([]);
    });

    it('counts in status only the chunks of versions searched now or on their way', async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'breaks-after-chunk', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk', dependsOn: ['extract'] },
        { name: 'breaks', type: 'throws_permanent', config: { match: 'bad' }, dependsOn: ['chunk'] },
        { name: 'embed', type: 'embed', dependsOn: ['breaks'] },
      ]);
      const source = makeSourceFolder({ 'ok.md': ALPHA, 'bad.md': BETA });
      const summary = await runPipeline(engine, {
        plan: await planPipeline(db, engine.registry, 'breaks-after-chunk'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(summary).to.include({ docsDone: 1, docsFailed: 1 });
      // bad.md's chunk is stored, never embedded: its version failed, and nothing will embed it until `cpe retry`
      const stored = await db.query<{ status: string }>('SELECT status FROM chunks ORDER BY id');
      expect(stored.map((c) => c.status).sort()).to.deep.equal(['embedded', 'pending']);
      expect((await statusReport(engine)).chunks).to.deep.equal({
        total: 1,
        waitingForEmbedding: 0,
        embedded: 1,
        failed: 0,
      });
    });

    it('reprocess runs the pipeline that processed the document, unless told another', async () => {
      const source = makeSourceFolder({ 'doc.md': ALPHA });
      await run(source);
      const [v1] = await versions();
      await engine.close();
      const cli = await runCli(['reprocess', String(v1!.id), '--json'], setup.env, undefined, 60_000);
      expect(cli.code, cli.stderr).to.equal(0);
      engine = await setup.open();
      const [last] = await engine.dbs.log.sql.query<{ pipeline_name: string }>(
        'SELECT pipeline_name FROM pipeline_runs ORDER BY id DESC LIMIT 1',
      );
      expect(last!.pipeline_name).to.equal('versions');
    });

    it('does not queue again a document whose item is still in flight (finalized, checkpoints not yet written)', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({ 'doc.md': ALPHA });
      await run(source);
      const plan = await planPipeline(db, engine.registry, 'versions');
      // done and latest (finalize did that), its checkpoints and the closing of its item still to come
      await db.run('DELETE FROM step_checkpoints');
      await db.run(
        "UPDATE pipeline_queue SET status = 'processing', locked_by = 'w', locked_until = '2999-01-01 00:00:00.000'",
      );
      expect(await engine.requeueStale(plan, source, false)).to.equal(0);
      await db.run("UPDATE pipeline_queue SET status = 'done', locked_by = NULL, locked_until = NULL");
      expect(await engine.requeueStale(plan, source, false)).to.equal(1);
    });

    it('does not bring back a version whose file was deleted when its retry comes after the deletion', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({ 'doc.md': ALPHA, 'other.md': BETA });
      await run(source);
      const [doc] = await db.query<Record<string, any>>("SELECT id FROM documents WHERE filename = 'doc.md'");
      rmSync(path.join(source, 'doc.md'));
      await run(source);
      await db.run(
        "UPDATE pipeline_queue SET status = 'failed', next_attempt_at = '2000-01-01 00:00:00.000' WHERE document_id = ? AND action = 'new'",
        [doc!.id],
      );
      const summary = await run(source);
      expect(summary).to.include({ docsDone: 0, docsSkipped: 1 });
      const [after] = await db.query<Record<string, any>>(
        'SELECT status, is_latest FROM documents WHERE id = ?',
        [doc!.id],
      );
      expect(after).to.deep.include({ status: 'deleted' });
      expect(Number(after!.is_latest)).to.equal(0);
      // the file comes back with the same content: a new version, latest
      writeFileSync(path.join(source, 'doc.md'), ALPHA);
      expect((await run(source)).docsDone).to.equal(1);
      const rows = await db.query<Record<string, any>>(
        "SELECT version, is_latest, status FROM documents WHERE filename = 'doc.md' ORDER BY version",
      );
      expect(rows.map((r) => [Number(r.version), Number(r.is_latest), r.status])).to.deep.equal([
        [1, 0, 'deleted'],
        [2, 1, 'done'],
      ]);
    });
  });
}
