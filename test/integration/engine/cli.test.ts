import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { projectRoot, runCli, spawnCli } from '../../helpers/cli.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

const waitFor = async (check: () => Promise<boolean>, timeoutMs = 30000) => {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('condition not reached in time');
};

for (const backend of testBackends()) {
  describe(`cpe command line (${backend})`, function () {
    this.timeout(120000);
    let setup: TestSetup;
    before(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      const engine = await setup.open();
      await insertPipeline(engine.dbs.content.sql, 'slow', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 400 } },
        { name: 'double', type: 'double' },
      ]);
      await insertPipeline(engine.dbs.content.sql, 'bad', [
        { name: 'x', type: 'double', config: { value: 'viel' } },
      ]);
      await engine.close();
    });
    after(async () => setup?.cleanup());

    it('lists step types and validates pipelines (exit 2 with the row named)', async () => {
      const steps = await runCli(['steps', '--json'], setup.env);
      expect(steps.code).to.equal(0);
      const listed = JSON.parse(steps.stdout).steps.map((s: { type: string }) => s.type);
      expect(listed).to.include.members(['detect', 'validate', 'finalize', 'double', 'sleep']);
      const bad = await runCli(['pipelines', 'validate', 'bad'], setup.env);
      expect(bad.code).to.equal(2);
      expect(bad.stdout).to.match(/pipeline_steps id=\d+ 'x': config\.value must be integer/);
      // a run the pipeline's configuration stops is recorded in ki_dev as a failed run, with the reason
      const refused = await runCli(['run', '--pipeline=bad'], setup.env);
      expect(refused.code).to.equal(2);
      const looked = await setup.open();
      const [last] = await looked.dbs.log.sql.query<Record<string, any>>(
        'SELECT * FROM pipeline_runs ORDER BY id DESC LIMIT 1',
      );
      await looked.close();
      expect(last).to.include({ pipeline_name: 'bad', status: 'failed' });
      expect(last!.error).to.match(/config\.value must be integer/);
      // every command that runs a pipeline records its refusal so: file, watch, worker
      const file = makeSourceFolder({ 'eins.md': '# Eins\n\nText.\n' });
      for (const command of [
        ['file', path.join(file, 'eins.md')],
        ['watch', `--source=${file}`],
        ['worker'],
      ]) {
        const refusedToo = await runCli([...command, '--pipeline=bad'], setup.env);
        expect(refusedToo.code, command[0]).to.equal(2);
        const logged = await setup.open();
        const [recorded] = await logged.dbs.log.sql.query<Record<string, any>>(
          'SELECT * FROM pipeline_runs ORDER BY id DESC LIMIT 1',
        );
        await logged.close();
        expect(recorded, command[0]).to.include({ pipeline_name: 'bad', status: 'failed' });
        expect(recorded!.command).to.match(new RegExp(`^cpe ${command[0]}`));
      }
      const good = await runCli(['pipelines', 'validate', 'Schulungsunterlagen'], setup.env);
      expect(good.code).to.equal(0);
      // all of them: a second default pipeline is a problem too (`cpe run` without --pipeline refuses it)
      const engine = await setup.open();
      await engine.dbs.content.sql.run(
        "UPDATE pipeline_configs SET is_default = 1 WHERE name = 'Schulungsunterlagen'",
      );
      await engine.close();
      const all = await runCli(['pipelines', 'validate'], setup.env);
      const reset = await setup.open();
      await reset.dbs.content.sql.run(
        "UPDATE pipeline_configs SET is_default = 0 WHERE name = 'Schulungsunterlagen'",
      );
      await reset.close();
      expect(all.code).to.equal(2);
      expect(all.stdout).to.match(
        /invalid {2}more than one default pipeline: 'Standard' \(id=\d+\), 'Schulungsunterlagen' \(id=\d+\)/,
      );
      const show = await runCli(['pipelines', 'show', 'Schulungsunterlagen'], setup.env);
      expect(show.stdout)
        .to.contain('per document:')
        .and.to.contain('finalize  <- metadata_store, vector_store');
    });

    it("runs the README's main command over the examples and exits by itself", async () => {
      // a setup of its own: the other cases count this setup's documents
      const own = createTestSetup(backend);
      try {
        const source = makeSourceFolder({});
        cpSync(path.join(projectRoot, 'examples/documents'), source, { recursive: true });
        // a worker thread or port left referenced would keep the process alive until the timeout kills it
        const run = await runCli(
          ['run', '--pipeline=Standard', `--source=${source}`],
          own.env,
          undefined,
          60_000,
        );
        expect(run.signal, 'the process did not exit by itself').to.equal(null);
        expect(run.code, run.stderr).to.equal(0);
        expect(run.stdout).to.match(/run \d+ ok: 6 done, 0 failed/);
      } finally {
        await own.cleanup();
      }
    });

    it('rejects unknown options and bad configuration with exit 2, and runs no command then', async () => {
      const unknown = await runCli(['run', '--pipelin=Standard'], setup.env);
      expect(unknown.code).to.equal(2);
      expect(unknown.stderr).to.match(/Unknown argument/i);
      // a subcommand group blamed the global options given before it ("Unknown arguments: data-dir, dataDir, bogus")
      for (const group of ['pipelines', 'db', 'graph']) {
        const bogus = await runCli([`--data-dir=${setup.dataDir}`, group, 'bogus'], setup.env);
        expect(bogus.code, group).to.equal(2);
        expect(bogus.stderr, group).to.match(/^cpe: Unknown argument: bogus\n/);
      }
      // a misspelt option must not leave the command to run with its defaults (it did: yargs goes on after a
      // fail handler that returns)
      const source = makeSourceFolder(generatedDocuments(1, 'typo'));
      for (const args of [
        ['run', '--pipeline=Standard', `--sourse=${source}`],
        ['status', '--bogus'],
        ['search'],
      ]) {
        const result = await runCli(args, setup.env);
        expect(result.code, args.join(' ')).to.equal(2);
        expect(result.stdout, args.join(' ')).to.equal('');
        expect(result.stderr.match(/^cpe: /gm), result.stderr).to.have.length(1);
      }
      if (backend === 'sqlite') {
        const inTheWay = path.join(source, 'typo-0000.md');
        const badDir = await runCli(['status', `--data-dir=${inTheWay}`], setup.env);
        expect(badDir.code).to.equal(2);
        expect(badDir.stderr).to.contain(
          `cpe: data folder ${inTheWay} cannot be used (a file is in the way): set --data-dir or CPE_DATA_DIR to a folder`,
        );
      }
      // a source folder that is not there is the command's error, before any run starts
      for (const [args, message] of [
        [
          ['run', '--source=/nonexistent-cpe-source'],
          'cpe: source folder /nonexistent-cpe-source does not exist',
        ],
        [
          ['watch', `--source=${path.join(source, 'typo-0000.md')}`],
          `cpe: source ${path.join(source, 'typo-0000.md')} is not a folder`,
        ],
      ] as const) {
        const result = await runCli([...args], setup.env);
        expect(result.code, args.join(' ')).to.equal(2);
        expect(result.stderr.trim(), args.join(' ')).to.equal(message);
      }
      // ids that are not whole numbers above 0 (yargs reads "abc" as NaN: "no run NaN in ki_dev")
      for (const [args, message] of [
        [['logs', 'abc'], 'cpe: run-id must be a whole number above 0'],
        [['reprocess', '0'], 'cpe: id must be a whole number above 0'],
        [['runs', '--last=abc'], 'cpe: last must be a whole number above 0'],
        [['runs', '--last=0'], 'cpe: last must be a whole number above 0'],
        [['runs', '--last=99999999999999999999'], 'cpe: last must be a whole number above 0'],
        [['process', '--limit=-1'], 'cpe: limit must be a whole number above 0'],
        // a debounce yargs reads as NaN, or a negative one, made the watch wait 1 ms
        ...['abc', '-5', '1.5'].map(
          (value) =>
            [
              ['watch', `--source=${source}`, `--debounce=${value}`],
              'cpe: debounce must be a whole number of milliseconds from 0 to 2147483647',
            ] as const,
        ),
      ] as const) {
        const result = await runCli([...args], setup.env);
        expect(result.code, args.join(' ')).to.equal(2);
        expect(result.stderr.trim(), args.join(' ')).to.equal(message);
      }
      const badEnv = await runCli(['status'], { ...setup.env, CPE_CONCURRENCY: 'many' });
      expect(badEnv.code).to.equal(2);
      expect(badEnv.stderr).to.contain('environment CPE_CONCURRENCY: concurrency must be integer');
      for (const [url, message] of [
        [
          'mysql://root:pw@127.0.0.1:3306/',
          'database URL mysql://root:***@127.0.0.1:3306/ must name a database',
        ],
        ['mysql://root@127.0.0.1:99999/ki_content', 'is not a valid URL'],
      ]) {
        const badUrl = await runCli(['status'], { ...setup.env, CPE_DB_URL: url });
        expect(badUrl.code, url).to.equal(2);
        expect(badUrl.stderr, url).to.contain(message);
      }
      const oneDb = await runCli(['status'], {
        ...setup.env,
        CPE_DB_URL: 'mysql://root@127.0.0.1:3306/cpe_same',
        CPE_LOG_DB_URL: 'mysql://root@127.0.0.1:3306/cpe_same',
      });
      expect(oneDb.code).to.equal(2);
      expect(oneDb.stderr).to.contain('ki_content and ki_dev are one database');
    });

    it('says what a scan queued, and refuses a scan without a folder (exit 2, recorded) instead of doing nothing', async () => {
      const env = { ...setup.env };
      for (const key of ['CPE_SOURCE', 'ANTHROPIC_API_KEY', 'CPE_OLLAMA_HOST', 'CPE_LLM_PROVIDER'])
        delete env[key];
      for (const args of [['run'], ['scan'], ['run', '--dry-run']]) {
        const result = await runCli(args, env);
        expect(result.code, args.join(' ')).to.equal(2);
        expect(result.stderr.trim(), args.join(' ')).to.equal(
          'cpe: no source folder to scan: give --source=DIR, or set CPE_SOURCE or "source" in the config file',
        );
      }
      const looked = await setup.open();
      const [refused] = await looked.dbs.log.sql.query<Record<string, any>>(
        'SELECT * FROM pipeline_runs ORDER BY id DESC LIMIT 1',
      );
      await looked.close();
      // the dry run left nothing in ki_dev; the scan before it is the last run, refused, under the command it was
      expect(refused).to.include({ pipeline_name: 'Standard', status: 'failed', command: 'cpe scan' });
      const source = makeSourceFolder(generatedDocuments(3, 'scan-count'));
      const scan = await runCli(['scan', `--source=${source}`], env);
      expect(scan.code, scan.stderr).to.equal(0);
      expect(scan.stdout).to.contain(
        `scanned ${source}: 3 new, 0 changed, 0 unchanged, 0 deleted; 3 queued (\`cpe process\` processes them)`,
      );
      const logs = await runCli(['logs'], env);
      expect(logs.stdout.split('\n')[0]).to.match(/^run \d+: Standard ok, cpe scan --source=/);
    });

    it('helps with a missing subcommand, an invalid pipeline, a collection or provider that is not there', async () => {
      const env = { ...setup.env };
      for (const key of ['ANTHROPIC_API_KEY', 'CPE_OLLAMA_HOST', 'CPE_LLM_PROVIDER']) delete env[key];
      for (const [args, message] of [
        [['graph'], 'cpe: name a subcommand: export (cpe graph --help)'],
        [['db'], 'cpe: name a subcommand: migrate or seed (cpe db --help)'],
        [['search', 'Feedback', '--collection=nope'], "cpe: collection 'nope' does not exist"],
        [['ask', 'Was ist Feedback?', '--provider=anthropic'], 'cpe: --provider=anthropic: '],
      ] as const) {
        const result = await runCli([...args], env);
        expect(result.code, args.join(' ')).to.equal(2);
        expect(result.stderr, args.join(' ')).to.contain(message);
      }
      // an invalid pipeline's rows as stored, then its problems
      const show = await runCli(['pipelines', 'show', 'bad'], env);
      expect(show.code).to.equal(2);
      expect(show.stdout).to.contain('bad: its rows in pipeline_steps as stored');
      expect(show.stdout).to.match(/\bx\s+double\b.*"value":"viel"/);
      expect(show.stderr).to.match(/'x': config\.value must be integer/);
      // a name that differs in case only is not found (MariaDB matched it), and no rows are shown for it
      const other = await runCli(['pipelines', 'show', 'BAD'], env);
      expect(other.code).to.equal(2);
      expect(other.stdout).to.equal('');
      expect(other.stderr).to.contain("pipeline 'BAD' not found (names are exact: did you mean 'bad'?)");
      const validate = await runCli(['pipelines', 'validate', 'bad'], env);
      expect(validate.stdout).to.match(/^invalid {2}bad:\n {2}pipeline_steps id=\d+ 'x'/);
      const config = await runCli(['config'], env);
      expect(config.stdout).to.contain(
        '  source            (unset: no folder: `cpe run` and `cpe scan` need --source)',
      );
      expect(config.stdout).to.match(/^ {2}ANTHROPIC_API_KEY \(unset\)$/m);
    });

    it('turns SIGINT into a cancelled run with nothing left locked, exit 130', async () => {
      const source = makeSourceFolder(generatedDocuments(6, 'sigint'));
      const child = spawnCli(['run', '--pipeline=slow', `--source=${source}`, '--concurrency=2'], setup.env);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      await waitFor(async () => stderr.includes('run '));
      await new Promise((r) => setTimeout(r, 700));
      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      // stopped unfinished with no document failed: neither 0 (everything done) nor 1 (documents failed)
      expect(stdout).to.match(/^run \d+ cancelled: \d+ done, 0 failed/);
      expect(code, stdout).to.equal(130);
      const engine = await setup.open();
      try {
        const [run] = await engine.dbs.log.sql.query<Record<string, any>>(
          'SELECT id, status FROM pipeline_runs ORDER BY id DESC LIMIT 1',
        );
        expect(run.status).to.equal('cancelled');
        // the documents in flight finished their steps: none was cut off
        expect(stderr).to.contain('stopping once the documents in flight are done; nothing new starts');
        const failed = await engine.dbs.log.sql.query(
          "SELECT id FROM pipeline_step_runs WHERE run_id = ? AND status = 'failed'",
          [run.id],
        );
        expect(failed).to.deep.equal([]);
        const done = await engine.dbs.content.sql.query("SELECT id FROM documents WHERE status = 'done'");
        expect(done.length).to.be.greaterThan(0);
        const locked = await engine.dbs.content.sql.query(
          "SELECT id FROM pipeline_queue WHERE status = 'processing' OR locked_by IS NOT NULL",
        );
        expect(locked).to.deep.equal([]);
      } finally {
        await engine.close();
      }
      const resume = await runCli(['run', '--pipeline=slow', `--source=${source}`], setup.env);
      expect(resume.code).to.equal(0);
    });

    it('loses nothing to SIGKILL: the next run (after the lease expires) finishes everything without duplicates', async () => {
      const source = makeSourceFolder(generatedDocuments(6, 'sigkill'));
      const env = { ...setup.env, CPE_LEASE_SECONDS: '5' };
      const child = spawnCli(['run', '--pipeline=slow', `--source=${source}`, '--concurrency=2'], env);
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      await waitFor(async () => /done\s+new/.test(out));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.on('close', resolve));
      if (setup.backend === 'sqlite') {
        // status tells the truth at once: the run ended (failed; its counts from its step records, tested with the
        // run log), and the dead process holds no items
        const status = await runCli(['status', '--json'], env);
        const report = JSON.parse(status.stdout);
        expect(report.runs[0]).to.include({ status: 'failed' });
        expect(report.workers).to.deep.equal([]);
      }
      await new Promise((r) => setTimeout(r, 5500)); // the killed run's leases expire
      const rerun = await runCli(['run', '--pipeline=slow', `--source=${source}`], env);
      expect(rerun.code, rerun.stderr).to.equal(0);
      const engine = await setup.open();
      try {
        const docs = await engine.dbs.content.sql.query<Record<string, any>>(
          "SELECT source_path, COUNT(*) AS n, MAX(status) AS status FROM documents WHERE filename LIKE 'sigkill%' GROUP BY source_path",
        );
        expect(docs).to.have.length(6);
        expect(docs.every((d) => Number(d.n) === 1 && d.status === 'done')).to.equal(true);
        const items = await engine.dbs.content.sql.query<Record<string, any>>(
          "SELECT status FROM pipeline_queue WHERE path LIKE '%sigkill%'",
        );
        expect(items.map((i) => i.status)).to.deep.equal(new Array(6).fill('done'));
      } finally {
        await engine.close();
      }
    });

    it('--dry-run lists per file what would be done and changes nothing; `file` processes one file', async () => {
      const source = makeSourceFolder(generatedDocuments(2, 'dry'));
      const dry = await runCli(
        ['run', '--pipeline=slow', `--source=${source}`, '--dry-run', '--json'],
        setup.env,
      );
      expect(dry.code, dry.stderr).to.equal(0);
      const report = JSON.parse(dry.stdout);
      expect(
        report.files.map((f: { decision: string; steps: string[] }) => [f.decision, f.steps]),
      ).to.deep.equal([
        ['new', ['nap', 'double']],
        ['new', ['nap', 'double']],
      ]);
      const engine = await setup.open();
      try {
        const queued = await engine.dbs.content.sql.query(
          "SELECT id FROM pipeline_queue WHERE path LIKE '%dry-%'",
        );
        expect(queued).to.deep.equal([]);
      } finally {
        await engine.close();
      }
      const one = await runCli(['file', `${source}/dry-0000.md`, '--pipeline=slow'], setup.env);
      expect(one.code, one.stderr).to.equal(0);
      expect(one.stdout).to.match(/1 done, 0 failed/);
      const again = await runCli(['file', `${source}/dry-0000.md`, '--pipeline=slow'], setup.env);
      expect(again.stdout).to.contain('unchanged');
      const json = await runCli(['file', `${source}/dry-0000.md`, '--pipeline=slow', '--json'], setup.env);
      expect(json.code).to.equal(0);
      expect(JSON.parse(json.stdout)).to.deep.include({ unchanged: true });
      expect(JSON.parse(json.stdout).document).to.include({ version: 1, status: 'done' });
      // the processed file is up to date, but `run --force` runs every step of it again: so does its dry run say
      const planned = async (...flags: string[]) => {
        const result = await runCli(
          ['run', '--pipeline=slow', `--source=${source}`, '--dry-run', '--json', ...flags],
          setup.env,
        );
        expect(result.code, result.stderr).to.equal(0);
        return JSON.parse(result.stdout).files.map((f: { decision: string; steps: string[] }) => [
          f.decision,
          f.steps,
        ]);
      };
      expect(await planned()).to.deep.equal([
        ['unchanged', []],
        ['new', ['nap', 'double']],
      ]);
      for (const flags of [['--force'], ['--force', '--rehash']]) {
        expect(await planned(...flags), flags.join(' ')).to.deep.equal([
          ['unchanged', ['nap', 'double']],
          ['new', ['nap', 'double']],
        ]);
      }
      const text = await runCli(
        ['run', '--pipeline=slow', `--source=${source}`, '--dry-run', '--force'],
        setup.env,
      );
      expect(text.stdout).to.contain(`unchanged ${source}/dry-0000.md\n          nap -> double\n`);
    });

    it('watch processes files as they arrive, plans again after a pipeline edit, then stops on SIGINT with exit 0', async () => {
      const source = makeSourceFolder({});
      const child = spawnCli(['watch', '--pipeline=slow', `--source=${source}`, '--debounce=300'], setup.env);
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      await waitFor(async () => stderr.includes('watching'));
      writeFileSync(path.join(source, 'neu.md'), '# Neu\n\nEin neues Dokument kommt an.\n');
      const engine = await setup.open();
      try {
        await waitFor(async () => {
          const rows = await engine.dbs.content.sql.query<{ status: string }>(
            'SELECT status FROM documents WHERE source_path = ?',
            [path.join(source, 'neu.md')],
          );
          return rows[0]?.status === 'done';
        });
        // an edit of the pipeline while it watches counts from the next pass on
        const sleepRow =
          "step_type = 'sleep' AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'slow')";
        await engine.dbs.content.sql.run(`UPDATE pipeline_steps SET config = '{"ms": 10}' WHERE ${sleepRow}`);
        try {
          writeFileSync(path.join(source, 'zweite.md'), '# Zweite\n\nNoch ein Dokument.\n');
          await waitFor(async () => stderr.includes("pipeline 'slow' changed: planned again"));
        } finally {
          await engine.dbs.content.sql.run(
            `UPDATE pipeline_steps SET config = '{"ms": 400}' WHERE ${sleepRow}`,
          );
        }
      } finally {
        await engine.close();
      }
      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code).to.equal(0);
    });

    it('prints status, runs, logs and a document report', async () => {
      const status = await runCli(['status', '--json'], setup.env);
      expect(status.code).to.equal(0);
      const report = JSON.parse(status.stdout);
      expect(report.profile.vectors).to.contain('embedded');
      expect(report.documents.done).to.be.at.least(6);
      const runs = await runCli(['runs', '--last=3', '--json'], setup.env);
      const [latest] = JSON.parse(runs.stdout);
      const logs = await runCli(['logs', String(latest.id)], setup.env);
      expect(logs.code).to.equal(0);
      expect(logs.stdout).to.contain('detect');
      // without a run id: the latest run
      const latestLogs = await runCli(['logs'], setup.env);
      expect(latestLogs.code).to.equal(0);
      expect(latestLogs.stdout.split('\n')[0]).to.equal(logs.stdout.split('\n')[0]);
      expect(latestLogs.stdout.split('\n')[0]).to.match(new RegExp(`^run ${latest.id}: `));
      const doc = await runCli(['status', `--doc=${report.runs.length ? 1 : 1}`], setup.env);
      expect(doc.code).to.equal(0);
      expect(doc.stdout).to.match(/document 1: .*\.md/);
      expect(doc.stdout).to.match(/nap\s+ok/);
    });

    it('finishes quietly when the reader of its output goes away (cpe status | head)', async () => {
      const child = spawnCli(['status'], setup.env);
      child.stdout.destroy(); // the reader is gone before the first line
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(stderr).to.not.contain('EPIPE');
      expect(code).to.equal(0);
    });

    it('worker goes on under the new plan after a pipeline edit, then stops on SIGINT with exit 0', async () => {
      const child = spawnCli(['worker', '--pipeline=slow'], setup.env);
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      const engine = await setup.open();
      const sleepRow =
        "step_type = 'sleep' AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'slow')";
      try {
        // planned and running under the pipeline as it is, then it is edited
        await waitFor(async () => /run \d+: pipeline 'slow'/.test(stderr));
        const [{ id: firstRun }] = await engine.dbs.log.sql.query<{ id: number }>(
          'SELECT MAX(id) AS id FROM pipeline_runs',
        );
        // an edit it cannot use: refused, naming the row, in the run's log too
        await engine.dbs.content.sql.run(
          `UPDATE pipeline_steps SET config = '{"ms": "x"}' WHERE ${sleepRow}`,
        );
        await waitFor(async () => stderr.includes('the pipeline as edited cannot be used')).catch((e) => {
          throw new Error(`${e.message}: ${stderr}`);
        });
        // written with the run's next flush of its log
        const refusedLines = () =>
          engine.dbs.log.sql.query<{ message: string }>(
            "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn' AND message LIKE 'the pipeline as edited%'",
            [firstRun],
          );
        await waitFor(async () => (await refusedLines()).length > 0);
        const refused = await refusedLines();
        expect(refused.length, stderr).to.equal(1);
        expect(refused[0]!.message).to.match(/pipeline_steps id=\d+/);
        await engine.dbs.content.sql.run(`UPDATE pipeline_steps SET config = '{"ms": 20}' WHERE ${sleepRow}`);
        await waitFor(async () => stderr.includes("pipeline 'slow' changed: planned again")).catch((e) => {
          throw new Error(`${e.message}: ${stderr}`);
        });
        // the run it ended says why
        const [ended] = await engine.dbs.log.sql.query<{ status: string; error: string | null }>(
          'SELECT status, error FROM pipeline_runs WHERE id = ?',
          [firstRun],
        );
        expect(ended!.status).to.equal('cancelled');
        expect(ended!.error).to.match(
          /^pipeline 'slow' was edited \(\w+ -> \w+\): the worker goes on under the new plan$/,
        );
      } finally {
        await engine.dbs.content.sql.run(
          `UPDATE pipeline_steps SET config = '{"ms": 400}' WHERE ${sleepRow}`,
        );
        await engine.close();
      }
      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code, stderr).to.equal(0);
    });
  });
}

describe('cpe run over folders it cannot list', function () {
  this.timeout(120000);
  // permissions bind root only through another user: as root the command runs as nobody
  const as = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-unlisted-'));
    chmodSync(dir, 0o777);
  });
  afterEach(() => {
    for (const folder of [path.join(dir, 'in'), path.join(dir, 'in/sub')]) chmodSync(folder, 0o755);
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the documents under a folder it cannot list, and refuses a source folder it cannot read', async () => {
    const source = makeSourceFolder(
      { 'a.md': '# A\n\nText über Rechte.\n', 'sub/s.md': '# S\n\nText über Delegation.\n' },
      path.join(dir, 'in'),
    );
    for (const folder of [dir, source, path.join(source, 'sub')]) chmodSync(folder, 0o777);
    const env = { PATH: process.env.PATH, HOME: dir, CPE_DATA_DIR: path.join(dir, 'data') };
    const run = () => runCli(['run', '--pipeline=Standard', `--source=${source}`], env, undefined, 60000, as);
    expect((await run()).code).to.equal(0);

    chmodSync(path.join(source, 'sub'), 0o000);
    const sub = await run();
    expect(sub.code).to.equal(0);
    expect(sub.stderr).to.contain(`${path.join(source, 'sub')}: cannot list folder (EACCES)`);
    chmodSync(path.join(source, 'sub'), 0o777);
    chmodSync(source, 0o000);
    const root = await run();
    expect(root.code).to.equal(2);
    expect(root.stderr).to.contain(`source folder ${source} cannot be read (EACCES)`);
    chmodSync(source, 0o777);

    const status = JSON.parse((await runCli(['status', '--json'], env, undefined, 60000, as)).stdout);
    expect(status.documents).to.deep.include({ done: 2 });

    // a data folder this user may not write: the configuration's error, naming the file
    chmodSync(path.join(dir, 'data'), 0o555);
    for (const name of ['ki_content.sqlite', 'ki_content.sqlite-wal', 'ki_content.sqlite-shm'])
      if (existsSync(path.join(dir, 'data', name))) chmodSync(path.join(dir, 'data', name), 0o444);
    const readOnly = await runCli(['status'], env, undefined, 60000, as);
    chmodSync(path.join(dir, 'data'), 0o777);
    expect(readOnly.code, readOnly.stderr).to.equal(2);
    expect(readOnly.stderr).to.contain(
      `${path.join(dir, 'data', 'ki_content.sqlite')} cannot be opened for writing`,
    );
  });
});

describe('cpe run over files it cannot read', function () {
  this.timeout(120000);
  // as in 'cpe run over folders it cannot list': as root the command runs as nobody
  const as = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-unread-'));
    chmodSync(dir, 0o777);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('fails a file it cannot read, naming it and why, until the file can be read again', async () => {
    const source = makeSourceFolder(
      {
        'a.md': '# A\n\nText über Rechte.\n',
        'b.md': '# B\n\nText über Delegation.\n',
        'c.md': '# C\n\nText über Feedback.\n',
      },
      path.join(dir, 'in'),
    );
    const [a, c] = [path.join(source, 'a.md'), path.join(source, 'c.md')];
    chmodSync(c, 0o000);
    const env = { PATH: process.env.PATH, HOME: dir, CPE_DATA_DIR: path.join(dir, 'data') };
    const run = () => runCli(['run', '--pipeline=Standard', `--source=${source}`], env, undefined, 60000, as);
    const status = async () =>
      JSON.parse((await runCli(['status', '--json'], env, undefined, 60000, as)).stdout) as {
        queue: Record<string, number>;
        recentFailures: Array<{ path: string; lastError: string }>;
        documents: Record<string, number>;
      };

    const first = await run();
    expect(first.code, first.stderr).to.equal(1);
    expect(first.stdout).to.match(/ok, with failures: 2 done, 1 failed, 0 skipped of 3 /);
    expect(first.stdout).to.contain(`failed: ${c}\n    cannot read (EACCES)`);
    let report = await status();
    expect(report.queue.failed).to.equal(1);
    expect(report.recentFailures.map((f) => [f.path, f.lastError])).to.deep.equal([
      [c, 'cannot read (EACCES)'],
    ]);

    // still unreadable: still one failure, counted again
    const again = await run();
    expect(again.code).to.equal(1);
    expect(again.stdout).to.match(/: 0 done, 1 failed, 0 skipped of 1 /);
    expect((await status()).queue.failed).to.equal(1);

    // readable: processed, and the failure is over
    chmodSync(c, 0o644);
    const fixed = await run();
    expect(fixed.code, fixed.stdout).to.equal(0);
    expect(fixed.stdout).to.match(/ ok: 1 done, 0 failed, 0 skipped of 1 /);
    report = await status();
    expect(report.queue.failed ?? 0).to.equal(0);
    expect(report.recentFailures).to.deep.equal([]);
    expect(report.documents).to.deep.equal({ done: 3 });

    // a document's file that can no longer be read: a failure, its document kept; readable again: nothing to do
    chmodSync(a, 0o000);
    const lost = await run();
    expect(lost.code).to.equal(1);
    expect(lost.stdout).to.contain(`failed: ${a}\n    cannot read (EACCES)`);
    report = await status();
    expect(report.recentFailures.map((f) => f.path)).to.deep.equal([a]);
    expect(report.documents).to.deep.equal({ done: 3 });
    chmodSync(a, 0o644);
    const back = await run();
    expect(back.code, back.stdout).to.equal(0);
    expect(back.stdout).to.match(/ ok: 0 done, 0 failed, 0 skipped of 0 /);
    report = await status();
    expect(report.queue.failed ?? 0).to.equal(0);
    expect(report.recentFailures).to.deep.equal([]);
  });
});

describe('custom TypeScript step plugins', function () {
  this.timeout(120000);
  it('loads a .ts plugin from a folder that is not "type": "module" (the compiled CLI, without a TypeScript loader)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-ts-plugin-'));
    try {
      writeFileSync(
        path.join(dir, 'einfach.ts'),
        [
          "import path from 'node:path';",
          'interface Cfg { wort: string }',
          "const plugin = { type: 'einfach', description: 'einfach ' + path.sep, scope: 'document' as const,",
          "  configSchema: { type: 'object', properties: { wort: { type: 'string', default: 'Feedback' } } },",
          '  async run(ctx: any) { const c: Cfg = ctx.config; ctx.report({ itemsIn: c.wort.length }); } };',
          'export default plugin;',
        ].join('\n'),
      );
      const result = spawnSync(process.execPath, [path.join(projectRoot, 'bin/cpe.js'), 'steps', '--json'], {
        env: { PATH: process.env.PATH, CPE_DATA_DIR: path.join(dir, 'data'), CPE_PLUGIN_DIRS: dir },
        cwd: dir,
        encoding: 'utf8',
      });
      expect(result.status, result.stderr).to.equal(0);
      const steps = JSON.parse(result.stdout).steps as Array<{ type: string; source: string }>;
      expect(steps.find((s) => s.type === 'einfach')?.source).to.equal(path.join(dir, 'einfach.ts'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
