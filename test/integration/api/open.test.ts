import path from 'node:path';
import { expect } from 'chai';
import { type CpeError, ErrorCodes, open } from '../../../src/index.js';
import { createTestSetup, fixturePlugins } from '../../helpers/backends.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

describe('the programmatic API', () => {
  it('opens cpe, plans and runs a pipeline, reports status and a document, closes', async () => {
    const setup = createTestSetup('sqlite', { plugins: [fixturePlugins] });
    const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    try {
      await insertPipeline(cpe.engine.dbs.content.sql, 'api', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double' },
      ]);
      const plan = await cpe.plan('api');
      expect(plan.steps.map((s) => s.name)).to.deep.equal(['detect', 'double']);
      const events: string[] = [];
      // a relative source is relative to the handle's cwd (as its data folder is), not to the process's
      const source = makeSourceFolder(generatedDocuments(3));
      const summary = await cpe.run({
        pipeline: 'api',
        source: path.relative(setup.dataDir, source),
        onEvent: (e) => events.push(e.type),
      });
      expect(summary).to.include({ status: 'ok', docsDone: 3 });
      expect(events.filter((e) => e === 'document-finished')).to.have.length(3);
      const status = await cpe.status();
      expect(status.documents).to.deep.equal({ done: 3 });
      const doc = await cpe.document(1);
      expect(doc!.steps.map((s) => [s.step, s.status])).to.deep.equal([['double', 'ok']]);
      const byPath = await cpe.document(path.relative(setup.dataDir, path.join(source, 'dokument-0000.md')));
      expect(byPath?.steps.map((s) => s.step)).to.deep.equal(['double']);
    } finally {
      await cpe.close();
      await setup.cleanup();
    }
  });

  it('refuses a run as `cpe run` does: an unknown pipeline recorded in ki_dev, a missing source folder a usage error', async () => {
    const setup = createTestSetup('sqlite');
    const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    try {
      const unknown = (await cpe.run({ pipeline: 'GibtEsNicht' }).catch((e: unknown) => e)) as CpeError;
      expect(unknown.code).to.equal(ErrorCodes.PIPELINE_NOT_FOUND);
      const [refused] = await cpe.engine.dbs.log.sql.query<Record<string, any>>(
        'SELECT pipeline_name, status, error FROM pipeline_runs ORDER BY id DESC LIMIT 1',
      );
      expect(refused).to.include({ pipeline_name: 'GibtEsNicht', status: 'failed' });
      const missing = (await cpe.run({ source: 'gibt-es-nicht' }).catch((e: unknown) => e)) as CpeError;
      expect(missing.code).to.equal(ErrorCodes.USAGE);
      expect(missing.message).to.equal(
        `source folder ${path.join(setup.dataDir, 'gibt-es-nicht')} does not exist`,
      );
    } finally {
      await cpe.close();
      await setup.cleanup();
    }
  });

  it("gives the run's warnings and errors to onLog, not to stderr, when the caller shows them itself", async () => {
    const setup = createTestSetup('sqlite');
    const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    const lines: string[] = [];
    const stderr: string[] = [];
    const write = process.stderr.write;
    try {
      const source = makeSourceFolder({ 'leer.pdf': '', 'notiz.md': '# Notiz\n\nEin Absatz.\n' });
      process.stderr.write = ((chunk: string) => stderr.push(String(chunk)) > 0) as typeof write;
      const summary = await cpe.run({ source, onLog: (level, line) => lines.push(`${level}|${line}`) });
      process.stderr.write = write;
      expect(summary).to.include({ docsDone: 1, docsFailed: 1 });
      expect(lines.filter((l) => l.startsWith('error|error [extract doc ')).join('\n')).to.contain(
        'leer.pdf: empty file',
      );
      expect(stderr.join('')).to.not.contain('empty file');
    } finally {
      process.stderr.write = write;
      await cpe.close();
      await setup.cleanup();
    }
  });

  it('refuses a second cpe on the same SQLite files in one process (it would stall the thread for 30 s)', async () => {
    const setup = createTestSetup('sqlite');
    const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    try {
      await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir }).then(
        () => expect.fail('a second cpe opened the same files'),
        (error: Error) =>
          expect(error.message).to.match(/ki_content\.sqlite is open already in this process/),
      );
    } finally {
      await cpe.close();
    }
    const again = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    await again.close();
    await setup.cleanup();
  });

  it('close() cancels a run in progress and waits for it; calls after close() are refused with a cpe error', async () => {
    const setup = createTestSetup('sqlite', { plugins: [fixturePlugins] });
    let cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    try {
      await insertPipeline(cpe.engine.dbs.content.sql, 'slow', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 300 } },
      ]);
      let closed: Promise<void> | undefined;
      const summary = await cpe.run({
        pipeline: 'slow',
        source: makeSourceFolder(generatedDocuments(6, 'slow')),
        concurrency: 1,
        onEvent: (e) => {
          if (e.type === 'document-started') closed ??= cpe.close();
        },
      });
      expect(summary.status).to.equal('cancelled');
      await closed;
      for (const call of [() => cpe.status(), () => cpe.plan('slow'), () => cpe.run({ pipeline: 'slow' })])
        await call().then(
          () => expect.fail('a call after close() ran'),
          (error: Error & { code?: string }) => {
            expect(error.code).to.equal('USAGE');
            expect(error.message).to.equal('cpe is closed: close() was called');
          },
        );
      await cpe.close(); // twice: fine
      // nothing was left locked: the same process opens it again and finishes the work
      cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
      const rest = await cpe.run({ pipeline: 'slow', concurrency: 2 });
      expect(rest.status).to.equal('ok');
      expect((await cpe.status()).queue).to.not.have.property('processing');
    } finally {
      await cpe.close();
      await setup.cleanup();
    }
  });
});
