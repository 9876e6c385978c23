import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

for (const backend of testBackends()) {
  describe(`cpe run options per command (${backend})`, function () {
    this.timeout(120000);
    let setup: TestSetup;
    /** rows a command that changes nothing must leave as they are */
    const counts = async () => {
      const engine = await setup.open();
      try {
        const count = async (db: typeof engine.dbs.content.sql, sql: string) =>
          Number((await db.query<{ n: number }>(sql))[0]!.n);
        const content = engine.dbs.content.sql;
        return {
          documents: await count(content, 'SELECT COUNT(*) AS n FROM documents'),
          queue: await count(content, "SELECT COUNT(*) AS n FROM pipeline_queue WHERE status <> 'done'"),
          checkpoints: await count(content, 'SELECT COUNT(*) AS n FROM step_checkpoints'),
          runs: await count(engine.dbs.log.sql, 'SELECT COUNT(*) AS n FROM pipeline_runs'),
        };
      } finally {
        await engine.close();
      }
    };
    before(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      const engine = await setup.open();
      await insertPipeline(engine.dbs.content.sql, 'quick', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double' },
      ]);
      await insertPipeline(engine.dbs.content.sql, 'quick2', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double', config: { value: 2 } },
      ]);
      await insertPipeline(engine.dbs.content.sql, 'nap', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 1500 } },
        { name: 'double', type: 'double' },
      ]);
      await engine.close();
    });
    after(async () => setup?.cleanup());

    it('refuses the run options a command does not honour (exit 2) instead of doing a real run', async () => {
      const source = makeSourceFolder(generatedDocuments(2, 'opts'));
      const file = path.join(source, 'opts-0000.md');
      const processed = await runCli(['file', file, '--pipeline=quick'], setup.env);
      expect(processed.code, processed.stderr).to.equal(0);
      const engine = await setup.open();
      const [doc] = await engine.dbs.content.sql.query<{ id: number }>(
        'SELECT id FROM documents WHERE source_path = ?',
        [file],
      );
      await engine.close();
      const before = await counts();
      // `cpe file --dry-run` stored the file, `cpe reprocess --dry-run` processed the version again, `cpe watch
      // --dry-run` ingested the folder: each offered the option in its --help and ignored it
      for (const [args, option] of [
        [['file', path.join(source, 'opts-0001.md'), '--dry-run'], 'dry-run'],
        [['file', file, '--force', '--dry-run'], 'dry-run'],
        [['file', file, '--rehash'], 'rehash'],
        [['file', file, `--source=${source}`], 'source'],
        [['file', file, '--concurrency=2'], 'concurrency'],
        [['reprocess', String(doc!.id), '--dry-run'], 'dry-run'],
        [['reprocess', String(doc!.id), '--force'], 'force'],
        [['reprocess', String(doc!.id), '--rehash'], 'rehash'],
        [['watch', `--source=${source}`, '--dry-run'], 'dry-run'],
        [['watch', `--source=${source}`, '--force'], 'force'],
        [['watch', `--source=${source}`, '--rehash'], 'rehash'],
        [['process', '--rehash'], 'rehash'],
        [['process', `--source=${source}`], 'source'],
        [['scan', `--source=${source}`, '--concurrency=2'], 'concurrency'],
      ] as const) {
        // a watch that took the option would run until stopped: killed after 20 s, it has no exit code
        const result = await runCli([...args, '--pipeline=quick'], setup.env, undefined, 20000);
        expect(result.code, `${args.join(' ')}\n${result.stderr}`).to.equal(2);
        expect(result.stderr, args.join(' ')).to.match(new RegExp(`^cpe: Unknown arguments?: ${option}`));
        expect(result.stdout, args.join(' ')).to.equal('');
      }
      expect(await counts()).to.deep.equal(before);
      // the options they do honour are still offered
      for (const [command, options] of [
        ['file', ['--pipeline', '--force', '--json']],
        ['reprocess', ['--pipeline', '--json']],
        ['watch', ['--pipeline', '--source', '--concurrency', '--json', '--debounce']],
        ['process', ['--pipeline', '--concurrency', '--dry-run', '--force', '--json', '--limit']],
        ['scan', ['--pipeline', '--source', '--dry-run', '--force', '--rehash', '--json']],
        ['run', ['--pipeline', '--source', '--concurrency', '--dry-run', '--force', '--rehash', '--json']],
      ] as const) {
        const help = await runCli([command, '--help'], setup.env);
        const offered = [...help.stdout.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]);
        expect(offered, command).to.deep.equal(['--help', '--version', '--config', '--data-dir', ...options]);
      }
    });

    it('process --dry-run lists the queue and reads no folder, not even CPE_SOURCE', async () => {
      const env = { ...setup.env, CPE_SOURCE: path.join(setup.dataDir, 'gibt-es-nicht') };
      const dry = await runCli(['process', '--dry-run'], env);
      // it scanned CPE_SOURCE and failed on the missing folder (exit 2)
      expect(dry.code, dry.stderr).to.equal(0);
      expect(dry.stdout).to.contain('nothing is changed');
      expect(dry.stdout).to.not.contain('gibt-es-nicht');
    });

    it('a dry run does not upgrade the data of an older cpe; any other command does', async () => {
      const newest = async () => {
        const engine = await setup.open();
        try {
          const [row] = await engine.dbs.content.sql.query<{ v: number }>(
            'SELECT MAX(version) AS v FROM cpe_migrations',
          );
          return Number(row!.v);
        } finally {
          await engine.close();
        }
      };
      const latest = await newest();
      // as an older cpe left it: without the last migration (its table, its record)
      const engine = await setup.open();
      try {
        await engine.dbs.content.sql.run('DROP TABLE run_step_states');
        await engine.dbs.content.sql.run('DELETE FROM cpe_migrations WHERE version = ?', [latest]);
      } finally {
        await engine.close();
      }
      const source = makeSourceFolder(generatedDocuments(1, 'upgrade'));
      for (const command of ['run', 'scan', 'process']) {
        const dry = await runCli(
          [
            command,
            '--pipeline=quick',
            '--dry-run',
            ...(command === 'process' ? [] : [`--source=${source}`]),
          ],
          setup.env,
        );
        expect(dry.code, dry.stderr).to.equal(2);
        expect(dry.stderr).to.match(new RegExp(`^cpe: ki_content lacks migration ${latest} '`));
        expect(dry.stderr).to.contain('a dry run changes nothing');
      }
      // it migrated silently, and the cpe the data came from then refused it
      const runAfter = await runCli(['run', '--pipeline=quick', `--source=${source}`], setup.env);
      expect(runAfter.code, runAfter.stderr).to.equal(0);
      expect(await newest()).to.equal(latest);
    });

    it('watch --json prints each pass summary as JSON', async () => {
      const source = makeSourceFolder(generatedDocuments(1, 'watchjson'));
      const { child, out, closed } = startCli(
        ['watch', '--pipeline=quick', `--source=${source}`, '--json'],
        setup.env,
      );
      const until = Date.now() + 30000;
      while (!out.stderr.includes('watching') && Date.now() < until)
        await new Promise((r) => setTimeout(r, 100));
      child.kill('SIGINT');
      expect((await closed).code, out.stderr).to.equal(0);
      expect(JSON.parse(out.stdout)).to.include({ status: 'ok', docsDone: 1, docsFailed: 0 });
    });

    it('says which unchanged files a scan queued again: all of them with --force, those behind the pipeline', async () => {
      const source = makeSourceFolder(generatedDocuments(3, 'again'));
      const run = await runCli(['run', '--pipeline=quick', `--source=${source}`], setup.env);
      expect(run.code, run.stderr).to.equal(0);
      const scan = await runCli(['scan', '--pipeline=quick', `--source=${source}`], setup.env);
      expect(scan.stdout).to.contain(
        `scanned ${source}: 0 new, 0 changed, 3 unchanged, 0 deleted; nothing to queue\n`,
      );
      // it said "nothing to queue" and queued every file, forced
      const forced = await runCli(['scan', '--pipeline=quick', `--source=${source}`, '--force'], setup.env);
      expect(forced.code, forced.stderr).to.equal(0);
      expect(forced.stdout).to.contain(
        `scanned ${source}: 0 new, 0 changed, 3 unchanged (3 queued again: --force), 0 deleted; 3 queued (\`cpe process\` processes them)\n`,
      );
      const engine = await setup.open();
      try {
        const queued = await engine.dbs.content.sql.query<{ forced: number }>(
          "SELECT forced FROM pipeline_queue WHERE status = 'pending' AND path LIKE '%again-%'",
        );
        expect(queued.map((q) => Number(q.forced))).to.deep.equal([1, 1, 1]);
      } finally {
        await engine.close();
      }
      expect((await runCli(['process', '--pipeline=quick'], setup.env)).stdout).to.match(/ 3 done, 0 failed/);
      // another pipeline has not processed them: its scan queues them again without --force
      writeFileSync(path.join(source, 'again-new.md'), '# Neu\n\nEin neues Dokument.\n');
      const other = await runCli(['scan', '--pipeline=quick2', `--source=${source}`], setup.env);
      expect(other.stdout).to.contain(
        `scanned ${source}: 1 new, 0 changed, 3 unchanged (3 queued again: not up to date with the pipeline), 0 deleted; 4 queued (\`cpe process\` processes them)\n`,
      );
      // the same figures for scripts: scan --json printed the run summary alone
      writeFileSync(path.join(source, 'again-new.md'), '# Neu\n\nEin geändertes Dokument.\n');
      const json = await runCli(['scan', '--pipeline=quick', `--source=${source}`, '--json'], setup.env);
      expect(json.code, json.stderr).to.equal(0);
      expect(JSON.parse(json.stdout).scan).to.deep.equal({
        source,
        new: 1,
        changed: 0,
        unchanged: 3,
        deleted: 0,
        ignored: 0,
        unreadable: 0,
        requeued: 0,
        queued: 1,
      });
    });

    it('file and reprocess stopped by SIGINT finish the document in flight and exit 130', async () => {
      const source = makeSourceFolder(generatedDocuments(1, 'stopped'));
      const file = path.join(source, 'stopped-0000.md');
      /** runs `cpe ARGS` and sends SIGINT while its document sleeps */
      const interrupted = async (args: string[]) => {
        const { child, out, closed } = startCli(args, setup.env);
        const until = Date.now() + 30000;
        while (!/^run \d+: pipeline 'nap'/m.test(out.stderr) && Date.now() < until)
          await new Promise((r) => setTimeout(r, 50));
        await new Promise((r) => setTimeout(r, 300));
        child.kill('SIGINT');
        const { code, signal } = await closed;
        return { result: [code, signal], stdout: out.stdout, stderr: out.stderr };
      };
      const first = await interrupted(['file', file, '--pipeline=nap']);
      expect(first.result, first.stderr).to.deep.equal([130, null]);
      expect(first.stdout).to.match(/^run \d+ cancelled: 1 done, 0 failed/);
      const engine = await setup.open();
      const [doc] = await engine.dbs.content.sql.query<{ id: number; status: string }>(
        'SELECT id, status FROM documents WHERE source_path = ?',
        [file],
      );
      await engine.close();
      expect(doc).to.include({ status: 'done' });
      // reprocess had no handler: Ctrl-C killed it in the middle of a step, its run left open
      const again = await interrupted(['reprocess', String(doc!.id), '--pipeline=nap']);
      expect(again.result, again.stderr).to.deep.equal([130, null]);
      expect(again.stdout).to.match(/^run \d+ cancelled: 1 done, 0 failed/);
    });
  });
}
