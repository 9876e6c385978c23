import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { mapMysqlError } from '../../../src/db/executor.js';
import type { SqlExecutor } from '../../../src/db/sql.js';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { enqueueMany } from '../../../src/engine/queue.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { statusReport } from '../../../src/engine/status.js';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { parseSqlTime, sqlTime } from '../../../src/util/time.js';
import { lifecycleCalls } from '../../fixtures/plugins/double.js';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';
import { interceptSql, interceptTransactions } from '../../helpers/sql.js';
import { renderPdf } from '../../unit/extract/pdf-fixtures.js';

for (const backend of testBackends()) {
  describe(`running pipelines (${backend})`, () => {
    let setup: TestSetup;
    let engine: Engine;
    beforeEach(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      engine = await setup.open();
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const plan = (name: string) => planPipeline(engine.dbs.content.sql, engine.registry, name);
    const stepRuns = (runId: number) =>
      engine.dbs.log.sql.query<Record<string, any>>(
        'SELECT * FROM pipeline_step_runs WHERE run_id = ? ORDER BY id',
        [runId],
      );

    it('runs a custom plugin pipeline inserted with SQL over a folder and records every step in ki_dev', async () => {
      lifecycleCalls.splice(0);
      await insertPipeline(engine.dbs.content.sql, 'custom', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double', config: { value: 4 } },
      ]);
      const source = makeSourceFolder({
        ...generatedDocuments(3),
        '.hidden.md': 'x',
        '.git/x.md': 'y',
        'notes.xyz': 'z',
      });
      const summary = await runPipeline(engine, {
        plan: await plan('custom'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(summary).to.include({ status: 'ok', docsTotal: 3, docsDone: 3, docsFailed: 0 });
      const rows = await stepRuns(summary.runId);
      const doubled = rows.filter((r) => r.step_name === 'double');
      expect(doubled).to.have.length(3);
      expect(doubled.every((r) => r.status === 'ok' && JSON.parse(r.counts).doubled === 8)).to.equal(true);
      const detect = rows.find((r) => r.step_name === 'detect')!;
      expect(JSON.parse(detect.counts)).to.include({ new: 3, ignored: 1 });
      const [run] = await engine.dbs.log.sql.query<Record<string, any>>(
        'SELECT * FROM pipeline_runs WHERE id = ?',
        [summary.runId],
      );
      expect(run).to.include({ status: 'ok', pipeline_name: 'custom' });
      expect(Number(run.docs_done)).to.equal(3);
      // a document step's setup and teardown run once per run; a run with no documents needs neither
      expect(lifecycleCalls.filter(([, runId]) => runId === summary.runId)).to.deep.equal([
        ['setup', summary.runId],
        ['teardown', summary.runId],
      ]);
      const idle = await runPipeline(engine, {
        plan: await plan('custom'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(idle.docsTotal).to.equal(0);
      expect(lifecycleCalls.filter(([, runId]) => runId === idle.runId)).to.deep.equal([]);
      const docs = await engine.dbs.content.sql.query<Record<string, any>>(
        'SELECT * FROM documents ORDER BY id',
      );
      expect(docs.map((d) => [d.status, Number(d.is_latest), Number(d.version)])).to.deep.equal([
        ['done', 1, 1],
        ['done', 1, 1],
        ['done', 1, 1],
      ]);
    });

    it('says in ki_dev that a source folder is not scanned when the pipeline has no detect step', async () => {
      await insertPipeline(engine.dbs.content.sql, 'no-scan', [
        { name: 'double', type: 'double', config: { value: 4 } },
      ]);
      const source = makeSourceFolder(generatedDocuments(2));
      const summary = await runPipeline(engine, {
        plan: await plan('no-scan'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(summary).to.include({ status: 'ok', docsTotal: 0 });
      const warnings = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn'",
        [summary.runId],
      );
      expect(warnings.map((w) => w.message)).to.deep.equal([
        `pipeline 'no-scan' has no detect step: ${source} is not scanned, only what is queued already is processed`,
      ]);
    });

    it('takes over at once the items a killed process of this machine held (SQLite), not those of live ones', async () => {
      await insertPipeline(engine.dbs.content.sql, 'scan-then-double', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double', config: { value: 4 } },
      ]);
      const source = makeSourceFolder(generatedDocuments(3, 'lease'));
      // queued, not processed: then held, as a worker leaves them when it is killed, with leases far from expired
      await runPipeline(engine, {
        plan: await plan('scan-then-double'),
        sourceDir: source,
        concurrency: 1,
        limit: 0,
      });
      const gone = spawnSync(process.execPath, ['-e', '']).pid; // a process that has ended
      const alive = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
      try {
        const holders = [
          `${os.hostname()}:${gone}:7`,
          `${os.hostname()}:${alive.pid}:7`,
          `elsewhere:${gone}:7`,
        ];
        const db = engine.dbs.content.sql;
        const ids = (await db.query<{ id: number }>('SELECT id FROM pipeline_queue ORDER BY id')).map(
          (r) => r.id,
        );
        for (const [i, holder] of holders.entries()) {
          await db.run(
            "UPDATE pipeline_queue SET status = 'processing', locked_by = ?, locked_until = ? WHERE id = ?",
            [holder, sqlTime(Date.now() + 3_600_000), ids[i]],
          );
        }
        // the runs of those processes, left running in ki_dev
        const logDb = engine.dbs.log.sql;
        const runOf = async (host: string, pid: number) =>
          (
            await logDb.run(
              `INSERT INTO pipeline_runs (pipeline_name, command, host, pid, status, started_at)
               VALUES ('scan-then-double', 'run', ?, ?, 'running', ?)`,
              [host, pid, sqlTime()],
            )
          ).insertId;
        const runs = [
          await runOf(os.hostname(), gone!),
          await runOf(os.hostname(), alive.pid!),
          await runOf('elsewhere', gone!),
        ];
        // what the dead run recorded: documents 1 and 2 through both steps, 3 in flight, 4 failed (after a retry
        // of 3's first step had failed and then worked)
        for (const [document, step, status] of [
          [1, 'scan', 'ok'],
          [1, 'double', 'ok'],
          [2, 'scan', 'ok'],
          [2, 'double', 'ok'],
          [3, 'scan', 'failed'],
          [3, 'scan', 'ok'],
          [4, 'scan', 'failed'],
        ] as const)
          await logDb.run(
            `INSERT INTO pipeline_step_runs (run_id, document_id, step_name, step_type, status, started_at, finished_at, duration_ms)
             VALUES (?, ?, ?, ?, ?, ?, ?, 1)`,
            [runs[0], document, step, step, status, sqlTime(), sqlTime()],
          );
        const summary = await runPipeline(engine, { plan: await plan('scan-then-double'), concurrency: 1 });
        const queue = await db.query<{ status: string; locked_by: string | null }>(
          'SELECT status, locked_by FROM pipeline_queue ORDER BY id',
        );
        const warnings = await engine.dbs.log.sql.query<{ message: string }>(
          "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn'",
          [summary.runId],
        );
        const runStates = await logDb.query<{
          status: string;
          error: string | null;
          duration_ms: number | null;
          docs_total: number;
          docs_done: number;
          docs_failed: number;
        }>(
          `SELECT status, error, duration_ms, docs_total, docs_done, docs_failed FROM pipeline_runs WHERE id IN (${runs.join(', ')}) ORDER BY id`,
        );
        if (backend === 'sqlite') {
          expect(summary.docsDone).to.equal(1);
          expect(queue.map((q) => q.status)).to.deep.equal(['done', 'processing', 'processing']);
          expect(warnings.map((w) => w.message)).to.deep.equal([
            `took over 1 queue item(s) that process ${gone} (worker ${holders[0]}) held when it ended without finishing them`,
            `run(s) ${runs[0]} marked failed: their process ended without finishing them`,
          ]);
          expect(runStates.map((r) => r.status)).to.deep.equal(['failed', 'running', 'running']);
          expect(runStates[0]!.error).to.contain(`process ${gone} ended without finishing the run`);
          // its documents as its step records say (they were 0 done, 0 failed before)
          expect(
            [runStates[0]!.docs_total, runStates[0]!.docs_done, runStates[0]!.docs_failed].map(Number),
          ).to.deep.equal([4, 2, 1]);
          // from its start until it was found dead
          expect(Number(runStates[0]!.duration_ms)).to.be.at.least(0);
          expect(runStates[0]!.duration_ms).to.not.equal(null);
        } else {
          expect(runStates.map((r) => r.status)).to.deep.equal(['running', 'running', 'running']);
          // a server's queue is shared by machines whose process ids this one cannot see: leases expire
          expect(summary.docsDone).to.equal(0);
          expect(queue.map((q) => q.locked_by)).to.deep.equal(holders);
        }
      } finally {
        alive.kill();
      }
    });

    it("starts the document steps' setup when a pre step expects documents, and tears it down without any", async () => {
      lifecycleCalls.splice(0);
      await insertPipeline(engine.dbs.content.sql, 'expecting', [
        { name: 'expect', type: 'expect_documents' },
        { name: 'double', type: 'double' },
      ]);
      const summary = await runPipeline(engine, { plan: await plan('expecting'), concurrency: 1 });
      expect(summary).to.include({ status: 'ok', docsTotal: 0 });
      // the setup ran while the pre step was still running, once; the run found no documents and tore it down
      expect(lifecycleCalls.filter(([, runId]) => runId === summary.runId)).to.deep.equal([
        ['expect', summary.runId],
        ['setup', summary.runId],
        ['expecting step done', summary.runId],
        ['teardown', summary.runId],
      ]);
    });
    it('runs independent branches of one document at the same time (proven from recorded start and end times)', async () => {
      await insertPipeline(engine.dbs.content.sql, 'branches', [
        { name: 'detect', type: 'detect' },
        { name: 'left', type: 'sleep', config: { ms: 300 } },
        { name: 'right', type: 'sleep', config: { ms: 300 }, dependsOn: [] },
        { name: 'join', type: 'double', dependsOn: ['left', 'right'] },
      ]);
      const source = makeSourceFolder(generatedDocuments(1));
      const summary = await runPipeline(engine, {
        plan: await plan('branches'),
        sourceDir: source,
        concurrency: 1,
      });
      expect(summary.docsDone).to.equal(1);
      const rows = await stepRuns(summary.runId);
      const span = (name: string) => {
        const r = rows.find((x) => x.step_name === name)!;
        return [parseSqlTime(r.started_at)!.getTime(), parseSqlTime(r.finished_at)!.getTime()];
      };
      const [leftStart, leftEnd] = span('left');
      const [rightStart, rightEnd] = span('right');
      const [joinStart] = span('join');
      expect(leftStart).to.be.below(rightEnd);
      expect(rightStart).to.be.below(leftEnd);
      expect(joinStart).to.be.at.least(Math.max(leftEnd!, rightEnd!));
    });

    it('retries a retryable failure with backoff, then succeeds; both attempts are recorded', async () => {
      await insertPipeline(engine.dbs.content.sql, 'flaky', [
        { name: 'detect', type: 'detect' },
        { name: 'flaky', type: 'fail_once', config: { marker_dir: path.join(setup.dataDir, 'markers') } },
      ]);
      const summary = await runPipeline(engine, {
        plan: await plan('flaky'),
        sourceDir: makeSourceFolder(generatedDocuments(2)),
        concurrency: 2,
      });
      expect(summary).to.include({ docsDone: 2, docsFailed: 0 });
      const rows = (await stepRuns(summary.runId)).filter((r) => r.step_name === 'flaky');
      expect(rows.map((r) => [r.status, Number(r.attempt)]).sort()).to.deep.equal([
        ['failed', 1],
        ['failed', 1],
        ['ok', 2],
        ['ok', 2],
      ]);
      expect(rows.find((r) => r.status === 'failed')!.error).to.contain('simulated 503');
    });

    it('fails a step that returns a failed status, and names what a step threw that is not an Error', async () => {
      for (const mode of ['returns-failed', 'throws-object'] as const) {
        await insertPipeline(engine.dbs.content.sql, mode, [
          { name: 'detect', type: 'detect' },
          { name: 'odd', type: 'misbehaves', config: { mode } },
        ]);
        const summary = await runPipeline(engine, {
          plan: await plan(mode),
          sourceDir: makeSourceFolder(generatedDocuments(1, mode)),
          concurrency: 1,
        });
        expect(summary).to.include({ docsDone: 0, docsFailed: 1 });
        expect(summary.failures[0]!.error).to.contain(
          {
            'returns-failed': `the step returned status "failed": Glossar fehlt`,
            'throws-object': '{"code":"E_GLOSSAR","detail":"Glossar fehlt"}',
          }[mode],
        );
      }
    });

    it('says at the start of a run that files of its folder failed for good earlier, until retried or changed', async () => {
      await insertPipeline(engine.dbs.content.sql, 'strict', [
        { name: 'detect', type: 'detect' },
        { name: 'odd', type: 'misbehaves', config: { mode: 'returns-failed' } },
      ]);
      const source = makeSourceFolder(generatedDocuments(2, 'strict'));
      const warnings = async () => {
        const lines: string[] = [];
        await runPipeline(engine, {
          plan: await plan('strict'),
          sourceDir: source,
          concurrency: 1,
          onLog: (level, line) => {
            if (level === 'warn') lines.push(line);
          },
        });
        return lines.filter((line) => line.includes('failed in earlier runs'));
      };
      // the run that fails them says nothing of earlier failures; the next one, which processes nothing, does
      expect(await warnings()).to.deep.equal([]);
      expect(await warnings()).to.deep.equal([
        "warn: 2 file(s) of this folder failed in earlier runs for a reason no retry mends (a corrupt file, a step's config) and are not processed again until they change: `cpe status` names them, `cpe retry` queues them again",
      ]);
    });

    /** One generated document through Standard: its row. */
    const oneDocument = async () => {
      const source = makeSourceFolder(generatedDocuments(1));
      await runPipeline(engine, { plan: await plan('Standard'), sourceDir: source, concurrency: 1 });
      const [doc] = await engine.dbs.content.sql.query<{
        id: number;
        source_path: string;
        content_hash: string;
      }>('SELECT id, source_path, content_hash FROM documents');
      return doc!;
    };
    /** The delete item a scan queues for a document whose file it found gone. */
    const queueDeletion = (doc: { id: number; source_path: string; content_hash: string }) =>
      enqueueMany(engine.dbs.content.sql, [
        {
          path: doc.source_path,
          hash: doc.content_hash,
          action: 'delete',
          documentId: Number(doc.id),
          maxAttempts: 3,
        },
      ]);

    it("retracts a deleted file's version that an earlier attempt marked deleted but could not retract", async () => {
      const db = engine.dbs.content.sql;
      const doc = await oneDocument();
      // the file is gone; the first attempt of its delete item marked the document deleted, then the vector index
      // was unreachable
      rmSync(doc.source_path);
      await db.run("UPDATE documents SET status = 'deleted', is_latest = 0 WHERE id = ?", [doc.id]);
      await queueDeletion(doc!);
      const retried = await runPipeline(engine, { plan: await plan('Standard'), concurrency: 1 });
      expect(retried).to.include({ docsFailed: 0 });
      const left = await db.query('SELECT id FROM chunks WHERE document_id = ?', [doc.id]);
      const points = await db.query('SELECT point_id FROM vector_points WHERE document_id = ?', [doc.id]);
      expect([left.length, points.length]).to.deep.equal([0, 0]);
    });

    it('lets a deletion wait while a version of the file is being processed by a worker', async () => {
      const db = engine.dbs.content.sql;
      const doc = await oneDocument();
      rmSync(doc.source_path);
      // a worker elsewhere processes the file's item (its lease runs), when the scan finds the file gone
      await db.run(
        "UPDATE pipeline_queue SET status = 'processing', locked_by = 'elsewhere:1:1', locked_until = ? WHERE action <> 'delete'",
        [sqlTime(Date.now() + 60_000)],
      );
      await queueDeletion(doc);
      const summary = await runPipeline(engine, { plan: await plan('Standard'), concurrency: 1 });
      expect(summary).to.include({ status: 'ok', docsFailed: 0 });
      // handed back when the run ends, waiting (not failed): the next run or worker deletes the file's documents
      const [waiting] = await db.query<Record<string, any>>(
        "SELECT status, attempts, next_attempt_at, last_error FROM pipeline_queue WHERE action = 'delete'",
      );
      expect(waiting).to.include({
        status: 'pending',
        last_error: 'waiting: a version of the file is being processed',
        next_attempt_at: null,
      });
      expect(Number(waiting!.attempts)).to.equal(0);
      const [kept] = await db.query<{ status: string }>('SELECT status FROM documents WHERE id = ?', [
        doc.id,
      ]);
      expect(kept!.status).to.equal('done');
    });

    it('deletes a file whose deletion waited for a version this run processed before the run ends', async () => {
      const db = engine.dbs.content.sql;
      const doc = await oneDocument();
      rmSync(doc.source_path);
      // its version reprocessed (from the archive) and its deletion, claimed together: the deletion waits
      await enqueueMany(db, [
        {
          path: doc.source_path,
          hash: doc.content_hash,
          action: 'update',
          documentId: Number(doc.id),
          maxAttempts: 3,
        },
      ]);
      await queueDeletion(doc);
      const summary = await runPipeline(engine, { plan: await plan('Standard'), concurrency: 2 });
      expect(summary, JSON.stringify(summary.failures)).to.include({
        status: 'ok',
        docsTotal: 2,
        docsDone: 2,
        docsFailed: 0,
      });
      const queue = await db.query<{ action: string; status: string }>(
        'SELECT action, status FROM pipeline_queue ORDER BY id',
      );
      expect(queue.map((q) => [q.action, q.status])).to.deep.equal([
        ['new', 'done'],
        ['update', 'done'],
        ['delete', 'done'],
      ]);
      const [deleted] = await db.query<{ status: string }>('SELECT status FROM documents WHERE id = ?', [
        doc.id,
      ]);
      expect(deleted!.status).to.equal('deleted');
      const chunks = await db.query('SELECT id FROM chunks WHERE document_id = ?', [doc.id]);
      expect(chunks).to.deep.equal([]);
    });

    it('deletes the documents of a folder replaced by a file of its name, or by a link to a folder elsewhere', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({
        'teil/a.md': '# Teil A\n\nEin Text über Konflikte im Team und wie man sie klärt.\n',
        'verweis/b.md': '# Teil B\n\nEin Text über Feedback und Ich-Botschaften im Gespräch.\n',
      });
      const standard = await plan('Standard');
      const first = await runPipeline(engine, { plan: standard, sourceDir: source, concurrency: 1 });
      expect(first.docsDone).to.equal(2);
      // a file where the folder was (ENOTDIR for the paths under it), a link to a copy outside the source
      rmSync(path.join(source, 'teil'), { recursive: true });
      writeFileSync(path.join(source, 'teil'), 'kein Dokument');
      const outside = makeSourceFolder({
        'b.md': '# Teil B\n\nEin Text über Feedback und Ich-Botschaften im Gespräch.\n',
      });
      rmSync(path.join(source, 'verweis'), { recursive: true });
      symlinkSync(outside, path.join(source, 'verweis'));
      const second = await runPipeline(engine, { plan: standard, sourceDir: source, concurrency: 1 });
      expect(second.docsFailed, JSON.stringify(second.failures)).to.equal(0);
      const rows = await db.query<{ source_path: string; status: string }>(
        'SELECT source_path, status FROM documents ORDER BY source_path',
      );
      expect(rows.map((r) => [path.relative(source, r.source_path), r.status])).to.deep.equal([
        [path.join('teil', 'a.md'), 'deleted'],
        [path.join('verweis', 'b.md'), 'deleted'],
      ]);
      const [chunks] = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM chunks');
      expect(Number(chunks!.n)).to.equal(0);
    });

    it('keeps one document of a folder that a link inside the source reaches too, and deletes the one stored through the link', async () => {
      const db = engine.dbs.content.sql;
      const text = '# Teil A\n\nEin Text über Konflikte im Team und wie man sie klärt.\n';
      // `modul` a copy of `teil` first, then a link to it: its documents are those an earlier scan stored through
      // the link
      const source = makeSourceFolder({ 'teil/a.md': text, 'modul/a.md': text });
      const standard = await plan('Standard');
      expect(await runPipeline(engine, { plan: standard, sourceDir: source, concurrency: 1 })).to.include({
        docsDone: 2,
      });
      rmSync(path.join(source, 'modul'), { recursive: true });
      symlinkSync('teil', path.join(source, 'modul'));
      const second = await runPipeline(engine, { plan: standard, sourceDir: source, concurrency: 1 });
      expect(second, JSON.stringify(second.failures)).to.include({ docsFailed: 0, docsDone: 1 });
      const rows = await db.query<{ source_path: string; status: string; chunks: number }>(
        `SELECT source_path, status, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
         FROM documents d ORDER BY source_path`,
      );
      expect(
        rows.map((r) => [path.relative(source, r.source_path), r.status, Number(r.chunks)]),
      ).to.deep.equal([
        [path.join('modul', 'a.md'), 'deleted', 0],
        [path.join('teil', 'a.md'), 'done', 1],
      ]);
      // and so it stays
      expect(
        (await runPipeline(engine, { plan: standard, sourceDir: source, concurrency: 1 })).docsTotal,
      ).to.equal(0);
    });

    it('deletes nothing when the file is back, and never completes a version deleted while it was processed', async () => {
      const db = engine.dbs.content.sql;
      const doc = await oneDocument();
      // a scan saw the file gone for a moment; it is back when the delete item comes
      await queueDeletion(doc!);
      await runPipeline(engine, { plan: await plan('Standard'), concurrency: 1 });
      const [kept] = await db.query<{ status: string; is_latest: number }>(
        'SELECT status, is_latest FROM documents WHERE id = ?',
        [doc.id],
      );
      expect([kept!.status, Number(kept!.is_latest)]).to.deep.equal(['done', 1]);
      const [item] = await db.query<{ last_error: string | null }>(
        "SELECT last_error FROM pipeline_queue WHERE action = 'delete'",
      );
      expect(item!.last_error).to.equal('the file is there again: not deleted');

      // a version whose file is deleted while its steps run is not made done and latest at the end
      await insertPipeline(db, 'weg', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk' },
        { name: 'gone', type: 'misbehaves', config: { mode: 'deleted-meanwhile' } },
      ]);
      const other = makeSourceFolder({
        'weg.md': '# Weg\n\nDieser Text verschwindet gleich wieder aus dem Ordner.\n',
      });
      await runPipeline(engine, { plan: await plan('weg'), sourceDir: other, concurrency: 1 });
      const [gone] = await db.query<{ id: number; status: string; is_latest: number }>(
        "SELECT id, status, is_latest FROM documents WHERE filename = 'weg.md'",
      );
      expect([gone!.status, Number(gone!.is_latest)]).to.deep.equal(['deleted', 0]);
      expect(await db.query('SELECT id FROM chunks WHERE document_id = ?', [gone!.id])).to.have.length(0);
    });

    it('leaves the documents of files whose extension the detect step no longer lists, and deletes them once they are gone', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({
        'regeln.md': '# Regeln\n\nEin Text über Konflikte im Team und wie man sie klärt.\n',
        'liste.txt':
          'Prüfliste für Leitern und Tritte: Sprossen, Holme und Gelenke werden jährlich geprüft.\n',
      });
      const run = async () =>
        runPipeline(engine, { plan: await plan('Standard'), sourceDir: source, concurrency: 1 });
      expect(await run()).to.include({ docsDone: 2 });
      await db.run(
        `UPDATE pipeline_steps SET config = '{"extensions": [".md"]}' WHERE step_type = 'detect'
         AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'Standard')`,
      );
      const documents = async () =>
        (
          await db.query<{ source_path: string; status: string; chunks: number }>(
            `SELECT source_path, status, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
             FROM documents d ORDER BY source_path`,
          )
        ).map((r) => [path.basename(r.source_path), r.status, Number(r.chunks) > 0]);
      const deletions = async () =>
        (await db.query("SELECT id FROM pipeline_queue WHERE action = 'delete'")).length;
      // out of scope, not gone: neither queued for deletion nor deleted, run after run
      for (let i = 0; i < 2; i++) expect(await run()).to.include({ docsTotal: 0 });
      expect(await deletions()).to.equal(0);
      expect(await documents()).to.deep.equal([
        ['liste.txt', 'done', true],
        ['regeln.md', 'done', true],
      ]);
      // gone: deleted, though its extension is not listed
      rmSync(path.join(source, 'liste.txt'));
      const gone = await run();
      expect(gone, JSON.stringify(gone.failures)).to.include({ docsFailed: 0 });
      expect(await deletions()).to.equal(1);
      expect(await documents()).to.deep.equal([
        ['liste.txt', 'deleted', false],
        ['regeln.md', 'done', true],
      ]);
    });

    it('gives up an item whose process ended on every attempt, instead of crashing every worker in turn', async () => {
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder(generatedDocuments(1, 'absturz'));
      await runPipeline(engine, {
        plan: await plan('Standard'),
        sourceDir: source,
        concurrency: 1,
        limit: 0,
      });
      // three attempts, each claimed by a process that died holding it (its lease ran out)
      await db.run(
        "UPDATE pipeline_queue SET status = 'processing', attempts = 3, locked_by = 'elsewhere:1:1', locked_until = '2000-01-01 00:00:00.000'",
      );
      const summary = await runPipeline(engine, { plan: await plan('Standard'), concurrency: 1 });
      expect(summary).to.include({ docsFailed: 1, docsDone: 0 });
      const [item] = await db.query<{ status: string; last_error: string }>(
        'SELECT status, last_error FROM pipeline_queue',
      );
      expect(item!.status).to.equal('dead');
      expect(item!.last_error).to.equal(
        'given up: the process working on it ended 3 times before it was done (crashed or killed)',
      );
    });

    it('closes the run of a worker that ended holding items, with the counts its step records say', async () => {
      const db = engine.dbs.content.sql;
      const log = engine.dbs.log.sql;
      const source = makeSourceFolder(generatedDocuments(1, 'verwaist'));
      await runPipeline(engine, {
        plan: await plan('Standard'),
        sourceDir: source,
        concurrency: 1,
        limit: 0,
      });
      // a worker of another machine (MariaDB) or a dead process of this one (SQLite) held the item; its lease ran out
      const host = backend === 'mysql' ? 'anderer-rechner' : os.hostname();
      const pid = 999_999;
      const { insertId: deadRun } = await log.run(
        `INSERT INTO pipeline_runs (pipeline_id, pipeline_name, version_hash, command, host, pid, status, profile, started_at)
         VALUES (NULL, 'Standard', NULL, 'cpe worker', ?, ?, 'running', '{}', ?)`,
        [host, pid, sqlTime(Date.now() - 60_000)],
      );
      await log.run(
        `INSERT INTO pipeline_step_runs (run_id, step_name, step_type, status, attempt, tokens_in, tokens_out, started_at, finished_at, duration_ms)
         VALUES (?, 'extract', 'extract', 'ok', 1, 0, 0, ?, ?, 5)`,
        [deadRun, sqlTime(), sqlTime()],
      );
      await db.run(
        "UPDATE pipeline_queue SET status = 'processing', attempts = 1, locked_by = ?, locked_until = '2000-01-01 00:00:00.000'",
        [`${host}:${pid}:${deadRun}`],
      );
      await runPipeline(engine, { plan: await plan('Standard'), concurrency: 1 });
      const [closed] = await log.query<Record<string, any>>('SELECT * FROM pipeline_runs WHERE id = ?', [
        deadRun,
      ]);
      expect(closed).to.include({ status: 'failed' });
      expect(Number(closed!.steps_ok)).to.equal(1);
      expect(closed!.finished_at).to.not.equal(null);
      expect(Number(closed!.duration_ms)).to.be.greaterThan(50_000);
    });

    it("applies extract's own limits after page_split extracted under others, and runs no post step when idle", async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'seiten', [
        { name: 'detect', type: 'detect' },
        { name: 'page_split', type: 'page_split' },
        { name: 'extract', type: 'extract', config: { max_pages: 2 } },
        { name: 'index_optimize', type: 'index_optimize' },
      ]);
      const pdf = await renderPdf((doc) => {
        for (const text of ['Seite eins.', 'Seite zwei.', 'Seite drei.'])
          doc.addPage().fontSize(12).text(text, 50, 60);
      });
      const source = makeSourceFolder({});
      writeFileSync(path.join(source, 'drei.pdf'), pdf);
      const first = await runPipeline(engine, {
        plan: await plan('seiten'),
        sourceDir: source,
        concurrency: 1,
      });
      expect(first).to.include({ docsFailed: 1 });
      expect(first.failures[0]!.error).to.contain('too many pages (3, limit 2)');
      const idle = await runPipeline(engine, {
        plan: await plan('seiten'),
        sourceDir: source,
        concurrency: 1,
      });
      expect(idle).to.include({ docsTotal: 0 });
      expect((await stepRuns(idle.runId)).map((r) => r.step_name)).to.deep.equal(['detect']);
    });

    it('runs a post step that failed, or has not run since documents came or its config changed, even on an idle run', async () => {
      const db = engine.dbs.content.sql;
      const pipelineId = await insertPipeline(db, 'nachlauf', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double' },
        { name: 'optimize', type: 'index_optimize', dependsOn: ['double'] },
        { name: 'post', type: 'run_step_fails', config: { fail: true }, dependsOn: ['double'] },
        { name: 'after', type: 'run_step_fails', dependsOn: ['post'] },
      ]);
      const source = makeSourceFolder(generatedDocuments(2, 'nachlauf'));
      const run = async () =>
        runPipeline(engine, { plan: await plan('nachlauf'), sourceDir: source, concurrency: 1 });
      const postSteps = async (runId: number) =>
        (await stepRuns(runId))
          .filter((r) => r.document_id === null && r.step_name !== 'detect')
          .map((r) => [r.step_name, r.status]);
      const owed = async () =>
        (await statusReport(engine)).runStepsOwed.map((o) => [o.pipeline, o.step, o.status, o.runId]);

      // the documents are done, then the post step throws: the run fails and the step after it is not run
      const failure = await run().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(String(failure)).to.contain('Nachlauf kaputt');
      const [first] = await engine.dbs.log.sql.query<Record<string, any>>(
        'SELECT id, status, docs_done FROM pipeline_runs ORDER BY id DESC LIMIT 1',
      );
      expect([first!.status, Number(first!.docs_done)]).to.deep.equal(['failed', 2]);
      const firstId = Number(first!.id);
      // index_optimize has no collection to optimize here: it ends skipped, which is done as ok is
      expect(await postSteps(firstId)).to.deep.equal([
        ['optimize', 'skipped'],
        ['post', 'failed'],
      ]);
      // cpe status says what the next run owes
      expect(await owed()).to.deep.equal([
        ['nachlauf', 'after', 'pending', firstId],
        ['nachlauf', 'post', 'failed', firstId],
      ]);

      // the config mended with SQL: the next run finds no documents, and runs the failed step and the one after it
      await db.run(
        `UPDATE pipeline_steps SET config = '{"fail": false}' WHERE pipeline_id = ? AND name = 'post'`,
        [pipelineId],
      );
      const mended = await run();
      expect(mended).to.include({ status: 'ok', docsTotal: 0 });
      expect(await postSteps(mended.runId)).to.deep.equal([
        ['post', 'ok'],
        ['after', 'ok'],
      ]);
      const said = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND message LIKE 'no documents in this run%'",
        [mended.runId],
      );
      expect(said.map((l) => l.message)).to.deep.equal([
        `no documents in this run: of the steps after them only those owed run: 'post' (failed in run ${firstId}), 'after' (not run since documents were processed)`,
      ]);
      expect(await owed()).to.deep.equal([]);

      // all done and unchanged: an idle run runs no post step
      const idle = await run();
      expect(idle).to.include({ status: 'ok', docsTotal: 0 });
      expect(await postSteps(idle.runId)).to.deep.equal([]);

      // a post step whose config changed runs again, and only it
      await db.run(
        `UPDATE pipeline_steps SET config = '{"note": "neu"}' WHERE pipeline_id = ? AND name = 'after'`,
        [pipelineId],
      );
      const changed = await run();
      expect(await postSteps(changed.runId)).to.deep.equal([['after', 'ok']]);
    });

    it('processes a file whose path is longer than 1,024 characters beside the others', async () => {
      const source = makeSourceFolder(generatedDocuments(1, 'normal'));
      const deep = path.join(
        source,
        ...Array.from({ length: 6 }, (_, i) => `${i}-${'Unterordner'.repeat(18)}`),
      );
      mkdirSync(deep, { recursive: true });
      writeFileSync(path.join(deep, 'tief.md'), '# Tief\n\nEin Dokument weit unten im Ordnerbaum.\n');
      expect(path.join(deep, 'tief.md').length).to.be.above(1024);
      const summary = await runPipeline(engine, {
        plan: await plan('Standard'),
        sourceDir: source,
        concurrency: 1,
      });
      expect(summary).to.include({ status: 'ok', docsDone: 2, docsFailed: 0 });
      const again = await runPipeline(engine, {
        plan: await plan('Standard'),
        sourceDir: source,
        concurrency: 1,
      });
      expect(again).to.include({ docsTotal: 0 });
    });

    it('leaves queued files to a pipeline with document steps when its own has none', async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'NurScan', [{ name: 'detect', type: 'detect' }]);
      const source = makeSourceFolder(generatedDocuments(2));
      const scanOnly = await runPipeline(engine, {
        plan: await plan('NurScan'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(scanOnly).to.include({ status: 'ok', docsTotal: 0 });
      const pending = await db.query("SELECT id FROM pipeline_queue WHERE status = 'pending'");
      expect(pending).to.have.length(2);
      expect(await db.query('SELECT id FROM documents')).to.have.length(0);
      const standard = await runPipeline(engine, {
        plan: await plan('Standard'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(standard).to.include({ docsDone: 2 });
      const again = await runPipeline(engine, {
        plan: await plan('NurScan'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(again).to.include({ docsTotal: 0 });
      expect(await db.query("SELECT id FROM pipeline_queue WHERE status <> 'done'")).to.have.length(0);
    });

    it('names the step, its row and its plugin when a setup fails; a failing teardown is a warning', async () => {
      const db = engine.dbs.content.sql;
      for (const mode of ['setup-throws', 'teardown-throws'] as const) {
        await insertPipeline(db, mode, [
          { name: 'detect', type: 'detect' },
          { name: 'haken', type: 'misbehaves', config: { mode } },
        ]);
        const [row] = await db.query<{ id: number }>(
          "SELECT s.id FROM pipeline_steps s JOIN pipeline_configs p ON p.id = s.pipeline_id WHERE p.name = ? AND s.name = 'haken'",
          [mode],
        );
        const run = runPipeline(engine, {
          plan: await plan(mode),
          sourceDir: makeSourceFolder(generatedDocuments(2, mode)),
          concurrency: 2,
        });
        const where = `pipeline_steps id=${row!.id}, plugin ${path.join(fixturePlugins, 'misbehaves.ts')}`;
        if (mode === 'setup-throws') {
          const error = (await run.catch((e: unknown) => e)) as Error;
          expect(error.message).to.equal(
            `step 'haken' failed (attempt 1): setup failed (${where}): Setup kaputt`,
          );
          const [last] = await engine.dbs.log.sql.query<Record<string, any>>(
            'SELECT * FROM pipeline_runs ORDER BY id DESC LIMIT 1',
          );
          expect(last!.status).to.equal('failed');
          const failedStep = (await stepRuns(Number(last!.id))).find((r) => r.step_name === 'haken')!;
          expect(failedStep).to.include({ status: 'failed', document_id: null });
          expect(failedStep.error).to.contain('setup failed').and.contain('Setup kaputt');
        } else {
          const summary = await run;
          expect(summary).to.include({ status: 'ok', docsFailed: 0 }); // with the items the failed setup left queued
          const [warning] = await engine.dbs.log.sql.query<Record<string, any>>(
            "SELECT * FROM pipeline_log WHERE run_id = ? AND level = 'warn' AND step_name = 'haken'",
            [summary.runId],
          );
          expect(warning!.message).to.contain(`teardown failed (${where}): Aufräumen kaputt`);
        }
      }
    });

    it("survives a caller's onEvent that throws; a signal aborted before the run cancels it at once", async () => {
      await insertPipeline(engine.dbs.content.sql, 'events', [
        { name: 'detect', type: 'detect' },
        { name: 'a', type: 'double' },
      ]);
      const source = makeSourceFolder(generatedDocuments(3, 'events'));
      const thrown = await runPipeline(engine, {
        plan: await plan('events'),
        sourceDir: source,
        concurrency: 2,
        onEvent: (event) => {
          if (event.type !== 'step-finished') throw new Error(`callback bug on ${event.type}`);
        },
      });
      expect(thrown).to.include({ status: 'ok', docsDone: 3, docsFailed: 0 });
      const warned = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn'",
        [thrown.runId],
      );
      // said once per run (README), not on each of the run's events: 3 documents made more than a dozen of them
      const onEventWarnings = warned.filter((w) => w.message.startsWith('onEvent threw'));
      expect(onEventWarnings.map((w) => w.message)).to.deep.equal([
        "onEvent threw on 'run-started' (ignored, and so are its later failures in this run): callback bug on run-started",
      ]);
      // an async callback that rejects: the same (it was an unhandled rejection that ended the host process)
      writeFileSync(path.join(source, 'events-async.md'), '# Async\n\nEin weiteres Dokument.\n');
      const rejected = await runPipeline(engine, {
        plan: await plan('events'),
        sourceDir: source,
        concurrency: 2,
        onEvent: async (event) => {
          if (event.type === 'document-finished') throw new Error('async callback bug');
        },
      });
      expect(rejected).to.include({ status: 'ok', docsDone: 1 });
      await new Promise((r) => setImmediate(r));
      const asyncWarned = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn'",
        [rejected.runId],
      );
      expect(asyncWarned.map((w) => w.message).join('\n')).to.contain('async callback bug');

      const aborted = new AbortController();
      aborted.abort();
      writeFileSync(path.join(source, 'events-neu.md'), '# Neu\n\nNoch ein Dokument.\n');
      const cancelled = await runPipeline(engine, {
        plan: await plan('events'),
        sourceDir: source,
        concurrency: 2,
        signal: aborted.signal,
      });
      expect(cancelled).to.include({ status: 'cancelled', docsDone: 0 });
      for (const concurrency of [0, -1, Number.NaN])
        await runPipeline(engine, { plan: await plan('events'), concurrency }).then(
          () => expect.fail(`concurrency ${concurrency} was taken`),
          (error: Error) =>
            expect(error.message).to.match(/^concurrency must be a whole number of at least 1/),
        );
    });

    it('ends a cancelled run although a step never settles: run cancelled, its item handed back', async () => {
      await insertPipeline(engine.dbs.content.sql, 'stuck', [
        { name: 'detect', type: 'detect' },
        { name: 'stuck', type: 'misbehaves', config: { mode: 'never-settles' } },
      ]);
      const controller = new AbortController();
      const summary = await runPipeline(engine, {
        plan: await plan('stuck'),
        sourceDir: makeSourceFolder(generatedDocuments(1, 'stuck')),
        concurrency: 1,
        signal: controller.signal,
        onEvent: (event) => {
          // the document's first step is the stuck one: it is running 200 ms later
          if (event.type === 'document-started') setTimeout(() => controller.abort(), 200);
        },
      });
      expect(summary.status).to.equal('cancelled');
      const queue = await engine.dbs.content.sql.query<{ status: string; locked_by: string | null }>(
        'SELECT status, locked_by FROM pipeline_queue',
      );
      expect(queue).to.deep.equal([{ status: 'pending', locked_by: null }]);
    });

    it('counts a document by its last outcome when its queue item is retried within the run', async () => {
      await insertPipeline(engine.dbs.content.sql, 'flaky-item', [
        { name: 'detect', type: 'detect' },
        {
          name: 'flaky',
          type: 'fail_once',
          // as often as the step's attempts: the item fails, and its retry comes while the slow document runs
          config: { marker_dir: path.join(setup.dataDir, 'item-markers'), times: 3, match: 'flaky' },
        },
        { name: 'nap', type: 'sleep', config: { ms: 1500 } },
      ]);
      const summary = await runPipeline(engine, {
        plan: await plan('flaky-item'),
        sourceDir: makeSourceFolder({ ...generatedDocuments(1, 'flaky'), ...generatedDocuments(1, 'slow') }),
        concurrency: 2,
        onEvent: (event) => {
          // its retry is due at once (the queue waits 5 s before a first retry)
          if (event.type === 'document-finished' && event.status === 'failed')
            void engine.dbs.content.sql.run(
              "UPDATE pipeline_queue SET next_attempt_at = '2000-01-01 00:00:00.000' WHERE id = ?",
              [event.item.id],
            );
        },
      });
      const [item] = await engine.dbs.content.sql.query<Record<string, any>>(
        "SELECT status, attempts FROM pipeline_queue WHERE path LIKE '%flaky%'",
      );
      expect(item).to.deep.include({ status: 'done' });
      expect(Number(item!.attempts)).to.equal(2);
      expect(summary).to.include({ docsTotal: 2, docsDone: 2, docsFailed: 0 });
      expect(summary.failures).to.deep.equal([]);
    });

    it('isolates a permanent failure to its document: the rest succeed, the error is on the queue item and the document', async () => {
      await insertPipeline(engine.dbs.content.sql, 'picky', [
        { name: 'detect', type: 'detect' },
        { name: 'check', type: 'throws_permanent', config: { match: 'bad' } },
        { name: 'after', type: 'double' },
      ]);
      const source = makeSourceFolder({ ...generatedDocuments(3), 'bad-file.md': '# kaputt\n' });
      const finished: Array<{ documentId: number | null; status: string; error?: string }> = [];
      let stepsSkipped = 0;
      const summary = await runPipeline(engine, {
        plan: await plan('picky'),
        sourceDir: source,
        concurrency: 2,
        onEvent: (event) => {
          if (event.type === 'document-finished')
            finished.push({ documentId: event.documentId, status: event.status, error: event.error });
          if (event.type === 'step-finished' && event.status === 'skipped') stepsSkipped++;
        },
      });
      expect(summary).to.include({ status: 'ok', docsDone: 3, docsFailed: 1 });
      // the events count what the summary counts, the steps not run after a failure too
      expect(stepsSkipped).to.equal(summary.stepsSkipped).and.to.be.above(0);
      // each event names the document a new file became, and a failure says what failed
      expect(finished.every((f) => typeof f.documentId === 'number')).to.equal(true);
      expect(finished.filter((f) => f.status === 'failed').map((f) => f.error)).to.have.length(1);
      expect(finished.find((f) => f.status === 'failed')!.error).to.contain('simulated corrupt content');
      expect(summary.failures[0]!.path).to.equal(path.join(source, 'bad-file.md'));
      const [item] = await engine.dbs.content.sql.query<Record<string, any>>(
        "SELECT * FROM pipeline_queue WHERE path LIKE '%bad-file.md'",
      );
      expect(item.status).to.equal('failed');
      expect(item.next_attempt_at).to.equal(null);
      expect(item.last_error).to.contain('simulated corrupt content');
      const [doc] = await engine.dbs.content.sql.query<Record<string, any>>(
        "SELECT * FROM documents WHERE filename = 'bad-file.md'",
      );
      expect(doc.status).to.equal('failed');
      expect(doc.error).to.contain(`${path.join(source, 'bad-file.md')}: simulated corrupt content`);
      const rows = (await stepRuns(summary.runId)).filter((r) => Number(r.document_id) === Number(doc.id));
      expect(rows.find((r) => r.step_name === 'after')).to.include({
        status: 'skipped',
        reason: "not run: step 'check' failed",
      });
      expect(rows.find((r) => r.step_name === 'check')).to.include({
        status: 'failed',
        error_code: 'CORRUPT_FILE',
      });
    });

    it('refuses a file over maxFileMb at extraction, naming the limit, and logs the failure under its document and step', async () => {
      await engine.close();
      engine = await setup.open({ maxFileMb: 0.01 }); // 10,485 bytes
      const big = `# Großes Handbuch\n\n${'Ein Satz über Arbeitssicherheit im Lager. '.repeat(400)}\n`;
      const source = makeSourceFolder({ ...generatedDocuments(2), 'gross.md': big });
      const summary = await runPipeline(engine, {
        plan: await plan('Standard'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(summary).to.include({ docsDone: 2, docsFailed: 1 });
      const file = path.join(source, 'gross.md');
      const size = Buffer.byteLength(big);
      expect(summary.failures[0]!.error).to.contain(
        `${file}: file is too large (${size} bytes, limit 10485)`,
      );
      const [doc] = await engine.dbs.content.sql.query<Record<string, any>>(
        "SELECT * FROM documents WHERE filename = 'gross.md'",
      );
      expect(doc.status).to.equal('failed');
      const [line] = await engine.dbs.log.sql.query<Record<string, any>>(
        "SELECT * FROM pipeline_log WHERE run_id = ? AND level = 'error'",
        [summary.runId],
      );
      expect(line.message).to.contain('file is too large');
      expect(Number(line.document_id)).to.equal(Number(doc.id));
      expect(line.step_name).to.equal('extract');
    });

    it("runs the steps after a renamed step again, and a pipeline's steps after another pipeline replaced their data", async () => {
      const db = engine.dbs.content.sql;
      const paragraph = (i: number) =>
        `Absatz ${i}: Jede Maßnahme im Lager wird geprüft, dokumentiert und von der Leitung freigegeben. Die Unterweisung erfolgt jährlich.`;
      const text = `# Lagerhandbuch\n\n${Array.from({ length: 24 }, (_, i) => paragraph(i)).join('\n\n')}\n`;
      const source = makeSourceFolder({ 'lager-a.md': text, 'lager-b.md': text.replace('Lager', 'Werk') });
      const standard = "(SELECT id FROM pipeline_configs WHERE name = 'Standard')";
      await db.run(
        `UPDATE pipeline_steps SET config = '{"max_chars": 400}' WHERE step_type = 'chunk' AND pipeline_id = ${standard}`,
      );
      const run = async (name: string) =>
        runPipeline(engine, { plan: await plan(name), sourceDir: source, concurrency: 2 });
      const chunkCount = async () =>
        Number((await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM chunks'))[0]!.n);
      const ranSteps = async (runId: number) =>
        (await stepRuns(runId))
          .filter((r) => r.document_id !== null && r.status !== 'skipped')
          .map((r) => r.step_name)
          .sort();
      const consistent = async () => {
        const [waiting] = await db.query<{ n: number }>(
          "SELECT COUNT(*) AS n FROM chunks WHERE status <> 'embedded'",
        );
        const [orphans] = await db.query<{ n: number }>(
          'SELECT COUNT(*) AS n FROM vector_points vp LEFT JOIN chunks c ON c.id = vp.chunk_id WHERE vp.chunk_id IS NOT NULL AND c.id IS NULL',
        );
        expect(
          [Number(waiting!.n), Number(orphans!.n)],
          'chunks not embedded, points without their chunk',
        ).to.deep.equal([0, 0]);
      };

      await run('Standard');
      const small = await chunkCount();
      await insertPipeline(db, 'NurText', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk' },
        { name: 'embed', type: 'embed' },
      ]);
      await run('NurText'); // its chunk step (2000 characters) replaces the documents' chunks
      expect(await chunkCount()).to.be.lessThan(small);
      await consistent();
      const back = await run('Standard'); // Standard's checkpoints no longer describe the data: chunked again
      expect(await chunkCount()).to.equal(small);
      expect(await ranSteps(back.runId)).to.include.members(['chunk', 'chunk', 'embed', 'embed']);
      await consistent();

      await db.run(
        `UPDATE pipeline_steps SET name = 'zerteilen' WHERE step_type = 'chunk' AND pipeline_id = ${standard}`,
      );
      const renamed = await run('Standard');
      expect(await ranSteps(renamed.runId)).to.deep.equal(['embed', 'embed', 'zerteilen', 'zerteilen']);
      await consistent();
      expect(await run('Standard')).to.include({ docsTotal: 0 });
    });

    it('skips what is done on a rerun, reruns only a changed step and its dependants, and makes new versions', async () => {
      const db = engine.dbs.content.sql;
      const id = await insertPipeline(db, 'incremental', [
        { name: 'detect', type: 'detect' },
        { name: 'a', type: 'double' },
        { name: 'b', type: 'double' },
        { name: 'c', type: 'double', dependsOn: ['a'] },
      ]);
      const source = makeSourceFolder(generatedDocuments(2));
      const first = await runPipeline(engine, {
        plan: await plan('incremental'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(first.stepsOk).to.equal(1 + 2 * 3);

      const unchanged = await runPipeline(engine, {
        plan: await plan('incremental'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(unchanged).to.include({ docsTotal: 0, stepsOk: 1 }); // only detect: unchanged files cost no step work

      await db.run(`UPDATE pipeline_steps SET config = '{"value": 7}' WHERE pipeline_id = ? AND name = 'b'`, [
        id,
      ]);
      const changed = await runPipeline(engine, {
        plan: await plan('incremental'),
        sourceDir: source,
        concurrency: 2,
      });
      const rows = (await stepRuns(changed.runId)).filter((r) => r.document_id !== null);
      expect(rows.map((r) => r.step_name).sort()).to.deep.equal(['b', 'b']);

      // a changed file becomes a new version that references the previous one; the old one stops being latest
      const file = Object.keys(generatedDocuments(1))[0]!;
      writeFileSync(path.join(source, file), '# Neu\n\nGeänderter Inhalt.\n');
      const updated = await runPipeline(engine, {
        plan: await plan('incremental'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(updated.docsDone).to.equal(1);
      const versions = await db.query<Record<string, any>>(
        'SELECT * FROM documents WHERE filename = ? ORDER BY version',
        [file],
      );
      expect(versions.map((v) => [Number(v.version), Number(v.is_latest), v.status])).to.deep.equal([
        [1, 0, 'done'],
        [2, 1, 'done'],
      ]);
      expect(Number(versions[1]!.previous_version_id)).to.equal(Number(versions[0]!.id));

      // --force reprocesses everything
      const forced = await runPipeline(engine, {
        plan: await plan('incremental'),
        sourceDir: source,
        concurrency: 2,
        force: true,
      });
      expect(forced.docsDone).to.equal(2);

      // a deleted file becomes a delete item; its document is marked deleted
      rmSync(path.join(source, file));
      const deleted = await runPipeline(engine, {
        plan: await plan('incremental'),
        sourceDir: source,
        concurrency: 2,
      });
      expect(deleted.docsDone).to.equal(1);
      const after = await db.query<Record<string, any>>('SELECT status FROM documents WHERE filename = ?', [
        file,
      ]);
      expect(after.every((d) => d.status === 'deleted')).to.equal(true);
      const left = await db.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM documents WHERE is_latest = 1 AND status = 'done'",
      );
      expect(Number(left[0]!.n)).to.equal(1);
    });

    /** A pipeline 'quick' of two steps that take no time: detect, then double. */
    const insertQuickPipeline = () =>
      insertPipeline(engine.dbs.content.sql, 'quick', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double', config: { value: 1 } },
      ]);

    /**
     * Runs 6 new files while the first claim's link of its items to their new rows fails with `error()`, and
     * checks that every file ends with one version, done, and its item linked to it.
     */
    const runWithFailingFirstLink = async (error: () => Error) => {
      await insertQuickPipeline();
      const db = engine.dbs.content.sql;
      let failed = 0;
      interceptTransactions(db, async (sql, _params, next) => {
        if (failed === 0 && /SET document_id = CASE/.test(sql)) {
          failed++;
          throw error();
        }
        return next();
      });
      const summary = await runPipeline(engine, {
        plan: await plan('quick'),
        sourceDir: makeSourceFolder(generatedDocuments(6)),
        concurrency: 2,
      });
      expect(failed).to.equal(1);
      expect(summary).to.include({ status: 'ok', docsTotal: 6, docsDone: 6, docsFailed: 0 });
      const docs = await db.query<{ id: number; status: string; version: number }>(
        'SELECT id, status, version FROM documents ORDER BY id',
      );
      expect(docs.map((d) => [d.status, Number(d.version)])).to.deep.equal(
        Array.from({ length: 6 }, () => ['done', 1]),
      );
      const items = await db.query<{ status: string; document_id: number }>(
        'SELECT status, document_id FROM pipeline_queue ORDER BY document_id',
      );
      expect(items.map((i) => [i.status, Number(i.document_id)])).to.deep.equal(
        docs.map((d) => ['done', Number(d.id)]),
      );
    };

    /**
     * The number of items a claim statement asks for, or undefined for any other statement: SQLite claims in one
     * UPDATE, MariaDB selects the items first (its first arm asks for them all).
     */
    const claimLimit = (sql: string): number | undefined => {
      const claim =
        /^UPDATE pipeline_queue SET status = 'processing'[\s\S]*LIMIT (\d+)\)\s*RETURNING/.exec(sql) ??
        /^SELECT id(?:, locked_by)? FROM pipeline_queue (?:FORCE INDEX \(\w+\) )?WHERE status = 'pending'\s+ORDER BY id LIMIT (\d+) FOR UPDATE/.exec(
          sql,
        );
      return claim ? Number(claim[1]) : undefined;
    };

    /**
     * Runs `documents` new files with claims that come back `claimDelayMs` late and returns how many items each claim
     * asked for (its LIMIT). Late once committed, as from a server far away: a claim that held SQLite's one connection
     * that long kept the items claimed before it from starting (each counts its attempt in the database as it starts).
     */
    const claimSizes = async (pipeline: string, documents: number, claimDelayMs: number) => {
      const db = engine.dbs.content.sql;
      const sizes: number[] = [];
      const transaction = db.transaction.bind(db);
      db.transaction = async <T>(fn: (tx: SqlExecutor) => Promise<T>) => {
        let limit: number | undefined;
        const result = await transaction((tx) =>
          fn(
            interceptSql(tx, async (sql, _params, next) => {
              limit ??= claimLimit(sql);
              return next();
            }),
          ),
        );
        if (limit !== undefined) {
          sizes.push(limit);
          await new Promise((resolve) => setTimeout(resolve, claimDelayMs));
        }
        return result;
      };
      const summary = await runPipeline(engine, {
        plan: await plan(pipeline),
        sourceDir: makeSourceFolder(generatedDocuments(documents)),
        concurrency: 2,
      });
      expect(summary).to.include({ status: 'ok', docsDone: documents });
      return sizes;
    };

    it('claims more items at once while items finish before a claim comes back, and few while they are slow', async () => {
      await insertQuickPipeline();
      await insertPipeline(engine.dbs.content.sql, 'slow', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 60 } },
      ]);
      // quick items, slow claims (as on a server far away): the slots run dry while a claim is out, claims grow;
      // the first claim takes a slot's worth ahead only (nothing has shown yet how long an item takes)
      const growing = await claimSizes('quick', 300, 300);
      expect(growing[0]).to.equal(2 + 2);
      expect(Math.max(...growing)).to.be.above(2 + 2 * 16);
      expect(Math.max(...growing)).to.be.at.most(2 + 2 * 8 * 16);
      // slow items: every claim comes back in time, claims stay at one or two times 16 ahead
      const steady = await claimSizes('slow', 40, 0);
      expect(steady.length).to.be.above(1);
      expect(Math.max(...steady)).to.be.at.most(2 + 2 * 16);
    });

    it('leaves slow documents in the queue for another worker instead of claiming them all ahead', async function () {
      this.timeout(60_000);
      await insertPipeline(engine.dbs.content.sql, 'langsam', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 1200 } },
      ]);
      const source = makeSourceFolder(generatedDocuments(6, 'langsam'));
      await runPipeline(engine, { plan: await plan('langsam'), sourceDir: source, concurrency: 1, limit: 0 });
      // two workers, the second one starting a moment after the first
      const first = runPipeline(engine, { plan: await plan('langsam'), concurrency: 1 });
      await new Promise((r) => setTimeout(r, 300));
      const second = await runPipeline(engine, { plan: await plan('langsam'), concurrency: 1 });
      const one = await first;
      expect(one.docsDone + second.docsDone).to.equal(6);
      expect(second.docsDone).to.be.at.least(2);
    });

    it('a claim that fails for good ends the run once the items in flight are done, handing back the unstarted ones', async () => {
      await insertQuickPipeline();
      const db = engine.dbs.content.sql;
      let claims = 0;
      interceptTransactions(db, async (sql, _params, next) => {
        if (claimLimit(sql) !== undefined) {
          claims++;
          if (claims === 2) throw new Error('claim refused');
        }
        return next();
      });
      const error = await runPipeline(engine, {
        plan: await plan('quick'),
        sourceDir: makeSourceFolder(generatedDocuments(40)),
        concurrency: 2,
      }).catch((e) => e);
      expect(error).to.be.instanceOf(Error);
      expect((error as Error).message).to.equal('claim refused');
      expect(claims).to.equal(2);
      const items = await db.query<{ status: string; n: number }>(
        'SELECT status, COUNT(*) AS n FROM pipeline_queue GROUP BY status ORDER BY status',
      );
      const byStatus = Object.fromEntries(items.map((i) => [i.status, Number(i.n)]));
      // the first claim's items (two for the slots, two ahead): the started ones finished, the rest went back;
      // nothing stays locked
      expect(byStatus.processing).to.equal(undefined);
      expect(byStatus.done).to.be.at.least(2);
      expect((byStatus.done ?? 0) + (byStatus.pending ?? 0)).to.equal(40);
      const docs = await db.query<{ n: number }>("SELECT COUNT(*) AS n FROM documents WHERE status = 'done'");
      expect(Number(docs[0]!.n)).to.equal(byStatus.done);
    });

    it('claims again when a deadlock ends the transaction that creates the claimed documents: one version per file, each linked', async () => {
      // as a transaction's executor reports MariaDB's deadlock (on SQLite, which has none, a conflict): the claim
      // fails and is tried again
      await runWithFailingFirstLink(() =>
        backend === 'mysql'
          ? (mapMysqlError(
              Object.assign(new Error('Deadlock found when trying to get lock; try restarting transaction'), {
                errno: 1213,
                code: 'ER_LOCK_DEADLOCK',
              }),
            ) as Error)
          : new CpeError(ErrorCodes.DATABASE_CONFLICT, 'database lock conflict', { retryable: true }),
      );
    });

    it('takes the rows of a claim out again when linking its items fails for good: processItem creates each version once', async () => {
      // not retryable: the claim keeps its items, and processItem creates their documents one by one
      await runWithFailingFirstLink(() => new Error('link failed'));
    });

    it('counts as its documents only the items a drained run started, not those it had claimed ahead', async () => {
      await insertPipeline(engine.dbs.content.sql, 'drained', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 300 } },
      ]);
      const drain = new AbortController();
      const summary = await runPipeline(engine, {
        plan: await plan('drained'),
        sourceDir: makeSourceFolder(generatedDocuments(6, 'drained')),
        concurrency: 1,
        drain: drain.signal,
        onEvent: (e) => {
          if (e.type === 'document-started') drain.abort();
        },
      });
      expect(summary.status).to.equal('cancelled');
      // "1 done, 0 failed, 0 skipped of 6": the items claimed ahead went back untouched
      expect(summary).to.include({ docsDone: 1, docsFailed: 0, docsSkipped: 0, docsTotal: 1 });
      const [run] = await engine.dbs.log.sql.query<{ docs_total: number }>(
        'SELECT docs_total FROM pipeline_runs WHERE id = ?',
        [summary.runId],
      );
      expect(Number(run!.docs_total)).to.equal(1);
      const pending = await engine.dbs.content.sql.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM pipeline_queue WHERE status = 'pending' AND locked_by IS NULL",
      );
      expect(Number(pending[0]!.n)).to.equal(5);
    });

    it('stops cleanly when cancelled: run cancelled, claimed items released, nothing left processing', async () => {
      await insertPipeline(engine.dbs.content.sql, 'slow', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 2000 } },
      ]);
      const controller = new AbortController();
      const running = runPipeline(engine, {
        plan: await plan('slow'),
        sourceDir: makeSourceFolder(generatedDocuments(4)),
        concurrency: 2,
        signal: controller.signal,
        onEvent: (e) => {
          if (e.type === 'document-started') setTimeout(() => controller.abort(), 100);
        },
      });
      const summary = await running;
      expect(summary.status).to.equal('cancelled');
      const items = await engine.dbs.content.sql.query<Record<string, any>>(
        'SELECT status, locked_by, attempts FROM pipeline_queue',
      );
      expect(items).to.have.length(4);
      expect(
        items.every((i) => i.status === 'pending' && i.locked_by === null && Number(i.attempts) === 0),
      ).to.equal(true);
      // the documents made for them wait too: none is left "processing" with nothing running
      const docs = await engine.dbs.content.sql.query<{ status: string }>('SELECT status FROM documents');
      expect(docs.length).to.be.above(0);
      expect(docs.map((d) => d.status)).to.not.include('processing');
      const [run] = await engine.dbs.log.sql.query<Record<string, any>>(
        'SELECT status FROM pipeline_runs WHERE id = ?',
        [summary.runId],
      );
      expect(run.status).to.equal('cancelled');
    });
  });
}
