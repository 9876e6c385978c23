import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

/**
 * Plugins as a user writes them outside the project: plain JavaScript, no import of cpe. `synchron` has a run()
 * that is not async; `wackelt` throws a plain Error marked `retryable` on the first attempt per document (a file
 * in config.marker_dir remembers); `haengt` says it started (a file) and never settles.
 */
const PLUGINS: Record<string, string> = {
  'synchron.mjs': `export default { type: 'synchron', description: 'run() without async', scope: 'document',
  configSchema: { type: 'object' },
  run(ctx) { ctx.report({ itemsIn: 1 }); } };`,
  'wackelt.mjs': `import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
export default { type: 'wackelt', description: 'fails once, retryable', scope: 'document',
  configSchema: { type: 'object', properties: { marker_dir: { type: 'string' } } },
  async run(ctx) {
    const marker = path.join(ctx.config.marker_dir, 'wackelt-' + ctx.document.id);
    if (existsSync(marker)) return;
    writeFileSync(marker, 'einmal');
    const error = new Error('Server antwortet 503');
    error.retryable = true;
    throw error;
  } };`,
  'schlampig.mjs': `export default { type: 'schlampig', description: 'report(null), skip with an object', scope: 'document',
  configSchema: { type: 'object' },
  run(ctx) { ctx.report(null); return ctx.skip({ warum: 'nichts zu tun' }); } };`,
  'haengt.mjs': `import { writeFileSync } from 'node:fs';
export default { type: 'haengt', description: 'never settles', scope: 'document',
  configSchema: { type: 'object', properties: { marker: { type: 'string' } } },
  run(ctx) { writeFileSync(ctx.config.marker, 'begonnen'); return new Promise(() => {}); } };`,
  'haengt_setup.mjs': `export default { type: 'haengt_setup', description: 'setup never settles', scope: 'document',
  configSchema: { type: 'object' },
  setup() { return new Promise(() => {}); },
  async run() {} };`,
};

let plugins: string;
before(() => {
  plugins = mkdtempSync(path.join(os.tmpdir(), 'cpe-js-plugins-'));
  for (const [name, source] of Object.entries(PLUGINS)) writeFileSync(path.join(plugins, name), source);
});
after(() => rmSync(plugins, { recursive: true, force: true }));

for (const backend of testBackends()) {
  describe(`calling custom plugins written in JavaScript (${backend})`, () => {
    let setup: TestSetup;
    let engine: Engine;
    beforeEach(async () => {
      setup = createTestSetup(backend, { plugins: [plugins] });
      engine = await setup.open();
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const stepRuns = (runId: number, step: string) =>
      engine.dbs.log.sql.query<{ status: string; attempt: number; error: string | null }>(
        'SELECT status, attempt, error FROM pipeline_step_runs WHERE run_id = ? AND step_name = ? ORDER BY id',
        [runId, step],
      );

    it('takes what a run() that is not async returns as its result', async () => {
      await insertPipeline(engine.dbs.content.sql, 'synchron', [
        { name: 'detect', type: 'detect' },
        { name: 'synchron', type: 'synchron' },
      ]);
      const summary = await runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'synchron'),
        sourceDir: makeSourceFolder(generatedDocuments(2, 'synchron')),
        concurrency: 2,
      });
      expect(summary).to.include({ docsDone: 2, docsFailed: 0 });
      const rows = await stepRuns(summary.runId, 'synchron');
      expect(rows.map((r) => [r.status, r.error])).to.deep.equal([
        ['ok', null],
        ['ok', null],
      ]);
    });

    it('takes report(null) as a warning and a skip reason that is not text readably', async () => {
      await insertPipeline(engine.dbs.content.sql, 'schlampig', [
        { name: 'detect', type: 'detect' },
        { name: 'schlampig', type: 'schlampig' },
      ]);
      const summary = await runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'schlampig'),
        sourceDir: makeSourceFolder(generatedDocuments(1, 'schlampig')),
        concurrency: 1,
      });
      // report(null) failed the document ("Cannot convert undefined or null to object"), a skip said "[object Object]"
      expect(summary).to.include({ docsDone: 1, docsFailed: 0 });
      const [row] = await engine.dbs.log.sql.query<{ status: string; reason: string }>(
        "SELECT status, reason FROM pipeline_step_runs WHERE run_id = ? AND step_name = 'schlampig'",
        [summary.runId],
      );
      expect(row).to.deep.equal({ status: 'skipped', reason: '{"warum":"nichts zu tun"}' });
      const warnings = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn' AND step_name = 'schlampig'",
        [summary.runId],
      );
      expect(warnings.map((w) => w.message)).to.deep.equal([
        'report() takes an object of counts ({ name: number }), not null; not counted',
      ]);
    });

    it('retries a plain Error that its plugin marked `retryable`', async () => {
      await insertPipeline(engine.dbs.content.sql, 'wackelt', [
        { name: 'detect', type: 'detect' },
        { name: 'wackelt', type: 'wackelt', config: { marker_dir: setup.dataDir } },
      ]);
      const summary = await runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'wackelt'),
        sourceDir: makeSourceFolder(generatedDocuments(1, 'wackelt')),
        concurrency: 1,
      });
      expect(summary).to.include({ docsDone: 1, docsFailed: 0 });
      const rows = await stepRuns(summary.runId, 'wackelt');
      expect(rows.map((r) => [r.status, Number(r.attempt)])).to.deep.equal([
        ['failed', 1],
        ['ok', 2],
      ]);
      expect(rows[0]!.error).to.contain('Server antwortet 503');
    });
  });
}

describe('a plugin call that can never finish (SQLite, the command line)', function () {
  this.timeout(120000);

  it('fails the step naming its plugin by itself once nothing else is left, with slots to spare (concurrency 4)', async () => {
    const setup = createTestSetup('sqlite', { plugins: [plugins] });
    const marker = path.join(setup.dataDir, 'begonnen');
    try {
      const engine = await setup.open();
      await insertPipeline(engine.dbs.content.sql, 'haengt', [
        { name: 'detect', type: 'detect' },
        { name: 'haengt', type: 'haengt', config: { marker } },
      ]);
      await engine.close();
      // one document, four slots: the run polls the queue for the three free ones while the step hangs
      const source = makeSourceFolder(generatedDocuments(1, 'haengt'));
      const { code, stderr } = await runCli(
        ['run', '--pipeline=haengt', `--source=${source}`, '--concurrency=4'],
        setup.env,
        undefined,
        60_000,
      );
      const never = `run() of plugin ${path.join(plugins, 'haengt.mjs')} never finished: nothing left in the process could settle the promise it returned`;
      expect(stderr).to.contain(never);
      expect(stderr).to.not.contain('stopped unfinished');
      expect(code, stderr).to.equal(1); // a document failed
      const after = await setup.open();
      try {
        const runs = await after.dbs.log.sql.query<{ status: string }>('SELECT status FROM pipeline_runs');
        expect(runs).to.deep.equal([{ status: 'ok' }]);
        const queue = await after.dbs.content.sql.query<{
          status: string;
          locked_by: string | null;
          last_error: string;
        }>('SELECT status, locked_by, last_error FROM pipeline_queue');
        expect(queue).to.have.length(1);
        expect(queue[0]).to.include({ status: 'failed', locked_by: null });
        expect(queue[0]!.last_error).to.contain(never);
      } finally {
        await after.close();
      }
    } finally {
      await setup.cleanup();
    }
  });

  it('fails a run whose step setup() never settles, naming the step and its plugin', async () => {
    const setup = createTestSetup('sqlite', { plugins: [plugins] });
    try {
      const engine = await setup.open();
      await insertPipeline(engine.dbs.content.sql, 'haengt_setup', [
        { name: 'detect', type: 'detect' },
        { name: 'vorbereiten', type: 'haengt_setup' },
      ]);
      await engine.close();
      const source = makeSourceFolder(generatedDocuments(1, 'haengt-setup'));
      const cli = await runCli(
        ['run', '--pipeline=haengt_setup', `--source=${source}`],
        setup.env,
        undefined,
        60_000,
      );
      expect(cli.signal).to.equal(null);
      expect(cli.stderr).to.contain(`setup failed (pipeline_steps id=`);
      expect(cli.stderr).to.contain(
        `plugin ${path.join(plugins, 'haengt_setup.mjs')}): it never finished: nothing left in the process could settle the promise it returned`,
      );
      expect(cli.stderr).to.not.contain('stopped unfinished');
    } finally {
      await setup.cleanup();
    }
  });

  it('names the step that never finished, without claiming a deadlock, when the command still cannot go on', async () => {
    const setup = createTestSetup('sqlite', { plugins: [fixturePlugins] });
    try {
      const engine = await setup.open();
      await insertPipeline(engine.dbs.content.sql, 'verklemmt', [
        { name: 'detect', type: 'detect' },
        { name: 'odd', type: 'misbehaves', config: { mode: 'db-inside-transaction' } },
      ]);
      await engine.close();
      const source = makeSourceFolder(generatedDocuments(1));
      const cli = await runCli(
        ['run', '--pipeline=verklemmt', `--source=${source}`],
        setup.env,
        undefined,
        30_000,
      );
      expect(cli.signal).to.equal(null);
      expect(cli.code).to.equal(1);
      expect(cli.stderr).to.contain(
        `cpe: stopped unfinished: the command still waits after step 'odd' (plugin ${path.join(fixturePlugins, 'misbehaves.ts')}) on document 1 never finished, and nothing left in the process can end the wait (what the plugin started may hold what the command waits for, e.g. a statement through ctx.db inside its own ctx.db.transaction() instead of through tx)\n`,
      );
      expect(cli.stderr).to.not.contain('deadlock');
    } finally {
      await setup.cleanup();
    }
  });
});
