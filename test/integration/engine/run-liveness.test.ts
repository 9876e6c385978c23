import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { runsModule } from '../../../src/cli/commands/runs.js';
import type { Engine } from '../../../src/engine/engine.js';
import { enqueueMany } from '../../../src/engine/queue.js';
import { noTotals, RUN_DEAD_AFTER_MS, RunLog } from '../../../src/engine/run-log.js';
import { statusReport } from '../../../src/engine/status.js';
import { parseSqlTime, sqlTime } from '../../../src/util/time.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';

/** A run of another machine, left running in ki_dev with its last heartbeat `heartbeatAt` (null: a run from before heartbeats). */
async function insertRun(
  engine: Engine,
  {
    pid,
    heartbeatAt,
    startedAt = sqlTime(),
  }: { pid: number; heartbeatAt: string | null; startedAt?: string },
): Promise<number> {
  const { insertId } = await engine.dbs.log.sql.run(
    `INSERT INTO pipeline_runs (pipeline_name, command, host, pid, status, started_at, heartbeat_at)
     VALUES ('standard', 'worker', 'elsewhere', ?, 'running', ?, ?)`,
    [pid, startedAt, heartbeatAt],
  );
  return insertId;
}

/**
 * Queue items in ki_content with the given states, and the run's step records: each document went through `extract`
 * and `chunk` (or failed in `chunk`), as its item's `steps` say. Returns the items' ids.
 */
async function recordDocuments(
  engine: Engine,
  runId: number,
  docs: ReadonlyArray<{ queue: 'done' | 'processing' | 'failed'; steps: 'all' | 'chunk failed' }>,
): Promise<number[]> {
  const content = engine.dbs.content.sql;
  await enqueueMany(
    content,
    docs.map((_, i) => ({ path: `/quelle/dok${i}.md`, hash: `h${i}`, action: 'update', maxAttempts: 3 })),
  );
  const ids = (await content.query<{ id: number }>('SELECT id FROM pipeline_queue ORDER BY id')).map((r) =>
    Number(r.id),
  );
  for (const [i, doc] of docs.entries()) {
    await content.run('UPDATE pipeline_queue SET status = ?, locked_by = ? WHERE id = ?', [
      doc.queue,
      doc.queue === 'processing' ? `elsewhere:4242:${runId}` : null,
      ids[i],
    ]);
    const steps: Array<[string, string]> = [
      ['extract', 'ok'],
      ['chunk', doc.steps === 'all' ? 'ok' : 'failed'],
    ];
    for (const [step, status] of steps)
      await engine.dbs.log.sql.run(
        `INSERT INTO pipeline_step_runs (run_id, document_id, queue_id, step_name, step_type, status, tokens_in,
           started_at, finished_at, duration_ms)
         VALUES (?, ?, ?, ?, ?, ?, 5, ?, ?, 1)`,
        [runId, 100 + i, ids[i], step, step, status, sqlTime(), sqlTime()],
      );
  }
  return ids;
}

const runRow = async (engine: Engine, id: number) =>
  (await engine.dbs.log.sql.query<Record<string, any>>('SELECT * FROM pipeline_runs WHERE id = ?', [id]))[0]!;

/** `cpe runs --json`, through the command module, as a user would run it against the test's databases. */
async function cpeRunsJson(setup: TestSetup): Promise<Array<Record<string, any>>> {
  const saved = { db: process.env.CPE_DB_URL, log: process.env.CPE_LOG_DB_URL, code: process.exitCode };
  const write = process.stdout.write;
  let out = '';
  const setEnv = (key: 'CPE_DB_URL' | 'CPE_LOG_DB_URL', value: string | undefined) => {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  };
  setEnv('CPE_DB_URL', setup.env.CPE_DB_URL);
  setEnv('CPE_LOG_DB_URL', setup.env.CPE_LOG_DB_URL);
  process.stdout.write = ((chunk: string) => {
    out += chunk;
    return true;
  }) as typeof process.stdout.write;
  try {
    await (runsModule.handler as (args: unknown) => Promise<void>)({
      'data-dir': setup.dataDir,
      json: true,
      last: 10,
    });
  } finally {
    process.stdout.write = write;
    setEnv('CPE_DB_URL', saved.db);
    setEnv('CPE_LOG_DB_URL', saved.log);
    process.exitCode = saved.code;
  }
  return JSON.parse(out);
}

for (const backend of testBackends()) {
  describe(`runs that die, and runs that are still running, in ki_dev (${backend})`, () => {
    let setup: TestSetup;
    let engine: Engine;
    beforeEach(async () => {
      setup = createTestSetup(backend);
      engine = await setup.open();
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    it('counts as done for a dead run only the documents whose completion committed in ki_content', async () => {
      const runId = await insertRun(engine, { pid: 4242, heartbeatAt: sqlTime() });
      // two completed; two with all their step records whose completion still waited for its group commit when the
      // process was killed (their items stay leased to it, the next run does them again); one failed
      await recordDocuments(engine, runId, [
        { queue: 'done', steps: 'all' },
        { queue: 'processing', steps: 'all' },
        { queue: 'done', steps: 'all' },
        { queue: 'processing', steps: 'all' },
        { queue: 'failed', steps: 'chunk failed' },
      ]);
      const runLog = new RunLog(engine.dbs.log.sql, 'info', undefined, { content: engine.dbs.content.sql });
      // the claim that took over its expired leases closes it
      expect(await runLog.closeRunsOfWorkers([`elsewhere:4242:${runId}`])).to.deep.equal([runId]);
      const run = await runRow(engine, runId);
      expect(run.status).to.equal('failed');
      expect(
        [run.docs_total, run.docs_done, run.docs_failed, run.steps_ok, run.steps_failed].map(Number),
      ).to.deep.equal([5, 2, 1, 9, 1]);
    });

    it('closes a run whose heartbeat stopped, whatever machine ran it, and leaves a beating one running', async () => {
      const old = sqlTime(Date.now() - RUN_DEAD_AFTER_MS - 5_000);
      // a worker killed while it held no lease (no claim ever takes one over), one alive, and two from before
      // heartbeats: one started long ago, one just now
      const silent = await insertRun(engine, { pid: 4242, heartbeatAt: old });
      const beating = await insertRun(engine, { pid: 4343, heartbeatAt: sqlTime() });
      const legacyOld = await insertRun(engine, { pid: 4444, heartbeatAt: null, startedAt: old });
      const legacyNew = await insertRun(engine, { pid: 4545, heartbeatAt: null });
      await recordDocuments(engine, silent, [{ queue: 'done', steps: 'all' }]);
      // what `cpe status` shows (and `cpe runs`: the same runs)
      const shown = (await statusReport(engine, 10)).runs;
      const byId = new Map(shown.map((r) => [Number(r.id), r]));
      expect([silent, beating, legacyOld, legacyNew].map((id) => byId.get(id)!.status)).to.deep.equal([
        'failed',
        'running',
        'failed',
        'running',
      ]);
      const closed = await runRow(engine, silent);
      expect(closed.error).to.equal(
        `no heartbeat from process 4242 on elsewhere since ${old} (killed, crashed or cut off from ki_dev): the run did not finish`,
      );
      expect([closed.docs_total, closed.docs_done].map(Number)).to.deep.equal([1, 1]);
      expect(closed.finished_at).to.not.equal(null);
    });

    it('beats while the run lives, stops when it ends, and takes back a live run that another process closed', async () => {
      const runLog = new RunLog(engine.dbs.log.sql, 'info', undefined, { heartbeatMs: 30 });
      const startedAt = Date.now();
      const runId = await runLog.startRun({
        pipelineId: null,
        pipelineName: 'standard',
        versionHash: null,
        command: 'worker',
        profile: {},
      });
      const heartbeat = async () => parseSqlTime((await runRow(engine, runId)).heartbeat_at)?.getTime() ?? 0;
      const first = await heartbeat();
      await sleep(150);
      expect(await heartbeat()).to.be.above(first);
      // closed as dead by another process while ki_dev was out of its reach: its next beat says it lives
      await engine.dbs.log.sql.run(
        "UPDATE pipeline_runs SET status = 'failed', error = 'no heartbeat', finished_at = ? WHERE id = ?",
        [sqlTime(), runId],
      );
      await sleep(150);
      const revived = await runRow(engine, runId);
      expect([revived.status, revived.error, revived.finished_at]).to.deep.equal(['running', null, null]);
      await runLog.finishRun(runId, 'ok', noTotals(), startedAt);
      const ended = await heartbeat();
      await sleep(150);
      expect([(await runRow(engine, runId)).status, await heartbeat()]).to.deep.equal(['ok', ended]);
    });

    it('shows a running run with the same counts so far in `cpe status` and `cpe runs`', async () => {
      const runId = await insertRun(engine, { pid: 4242, heartbeatAt: sqlTime() });
      // one completed, one waiting for its completion's commit, one failed
      await recordDocuments(engine, runId, [
        { queue: 'done', steps: 'all' },
        { queue: 'processing', steps: 'all' },
        { queue: 'failed', steps: 'chunk failed' },
      ]);
      const columns = ['status', 'docs_total', 'docs_done', 'docs_failed'] as const;
      const pick = (r: Record<string, unknown>) => columns.map((c) => (c === 'status' ? r[c] : Number(r[c])));
      const status = (await statusReport(engine)).runs.find((r) => Number(r.id) === runId)!;
      // the command opens the databases itself (one cpe per SQLite file in a process)
      await engine.close();
      const runs = (await cpeRunsJson(setup)).find((r) => Number(r.id) === runId)!;
      engine = await setup.open();
      expect(pick(status)).to.deep.equal(['running', 3, 1, 1]);
      expect(pick(runs)).to.deep.equal(['running', 3, 1, 1]);
      expect([runs.steps_ok, runs.steps_failed, runs.tokens_in].map(Number)).to.deep.equal([5, 1, 30]);
    });
  });
}
