import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { open } from '../../../src/index.js';
import { createTestSetup, fixturePlugins } from '../../helpers/backends.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

/** A text file in Latin-1: its extraction warns "not valid UTF-8", so the run has a line for onLog. */
function folderWithAWarning(): string {
  const source = makeSourceFolder({ 'notiz.md': '# Notiz\n\nEin Absatz.\n' });
  writeFileSync(path.join(source, 'alt.txt'), Buffer.from('Prüfung der Geräte für Maßnahmen.\n', 'latin1'));
  return source;
}

/** Runs `fn` with process.stderr's writes collected instead of printed; restores stderr however `fn` ends. */
async function capturingStderr<T>(fn: () => Promise<T>): Promise<{ value: T; stderr: string[] }> {
  const stderr: string[] = [];
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string) => stderr.push(String(chunk)) > 0) as typeof write;
  try {
    return { value: await fn(), stderr };
  } finally {
    process.stderr.write = write;
  }
}

describe('the programmatic API with callbacks that fail, and close() early', () => {
  for (const kind of ['throws', 'rejects'] as const) {
    it(`takes an onLog that ${kind} as the callback's failure, not a document's nor the process's`, async () => {
      const setup = createTestSetup('sqlite');
      const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
      try {
        const { value: summary, stderr } = await capturingStderr(async () => {
          const summary = await cpe.run({
            source: folderWithAWarning(),
            onLog:
              kind === 'throws'
                ? () => {
                    throw new Error('Anzeige kaputt');
                  }
                : async () => {
                    throw new Error('Anzeige kaputt');
                  },
          });
          await new Promise((resolve) => setImmediate(resolve)); // a rejection would surface by now
          return summary;
        });
        expect(summary).to.include({ status: 'ok', docsDone: 2, docsFailed: 0 });
        const said = stderr.filter((line) => line.includes('onLog callback failed'));
        expect(said).to.deep.equal([
          'cpe: the onLog callback failed (Anzeige kaputt); ignored, its lines are in ki_dev\n',
        ]);
        const [logged] = await cpe.engine.dbs.log.sql.query<{ n: number }>(
          "SELECT COUNT(*) AS n FROM pipeline_log WHERE message LIKE '%not valid UTF-8%'",
        );
        expect(Number(logged!.n)).to.equal(1);
      } finally {
        await cpe.close();
        await setup.cleanup();
      }
    });
  }

  it('says an onEvent that throws once on stderr (README), not on each event of the run', async () => {
    const setup = createTestSetup('sqlite');
    const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    try {
      const { value: summary, stderr } = await capturingStderr(() =>
        cpe.run({
          source: makeSourceFolder(generatedDocuments(3, 'ereignis')),
          onEvent: () => {
            throw new Error('Anzeige kaputt');
          },
        }),
      );
      expect(summary).to.include({ status: 'ok', docsDone: 3, docsFailed: 0 });
      expect(stderr.filter((line) => line.includes('onEvent threw'))).to.deep.equal([
        "warn: onEvent threw on 'run-started' (ignored, and so are its later failures in this run): Anzeige kaputt\n",
      ]);
    } finally {
      await cpe.close();
      await setup.cleanup();
    }
  });

  it('close() called while run() still plans cancels that run instead of waiting for all of it', async () => {
    const setup = createTestSetup('sqlite', { plugins: [fixturePlugins] });
    const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    try {
      await insertPipeline(cpe.engine.dbs.content.sql, 'slow', [
        { name: 'detect', type: 'detect' },
        { name: 'nap', type: 'sleep', config: { ms: 300 } },
      ]);
      const running = cpe.run({
        pipeline: 'slow',
        source: makeSourceFolder(generatedDocuments(8, 'slow')),
        concurrency: 1,
      });
      const closed = cpe.close(); // the same tick: run() is planning
      const summary = await running;
      await closed;
      expect(summary.status).to.equal('cancelled');
      expect(summary.docsDone).to.equal(0);
    } finally {
      await cpe.close();
      await setup.cleanup();
    }
  });
});
