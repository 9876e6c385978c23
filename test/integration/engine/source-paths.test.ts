import { symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { storedSourceRoot } from '../../../src/engine/scan.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';

const text = (topic: string) => `# ${topic}\n\nDie Unterweisung zu ${topic} findet jährlich statt.\n`;

for (const backend of testBackends()) {
  describe(`source paths compared exactly (${backend})`, function () {
    this.timeout(120000);
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

    const run = async (sourceDir: string, force = false) =>
      runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard'),
        sourceDir,
        concurrency: 2,
        force,
      });
    /** per stored path: its versions as [version, status, latest, chunks] */
    const stored = async () => {
      const rows = await engine.dbs.content.sql.query<Record<string, any>>(
        `SELECT d.source_path, d.version, d.status, d.is_latest,
           (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
         FROM documents d ORDER BY d.id`,
      );
      const out: Record<string, Array<[number, string, number, number]>> = {};
      for (const r of rows) {
        const versions = out[r.source_path] ?? [];
        versions.push([Number(r.version), r.status, Number(r.is_latest), Number(r.chunks)]);
        out[r.source_path] = versions;
      }
      return out;
    };

    it('keeps a file whose name differs only in case from a changed one (regeln.md, Regeln.md)', async () => {
      const source = makeSourceFolder({ 'regeln.md': text('Leitern'), 'Regeln.md': text('Gerüste') });
      expect(await run(source)).to.include({ status: 'ok', docsDone: 2 });
      writeFileSync(path.join(source, 'regeln.md'), text('Tritte'));
      expect(await run(source)).to.include({ status: 'ok', docsTotal: 1, docsDone: 1 });
      const after = await stored();
      expect(after[path.join(source, 'regeln.md')]).to.deep.equal([
        [1, 'done', 0, 0],
        [2, 'done', 1, 1],
      ]);
      expect(after[path.join(source, 'Regeln.md')]).to.deep.equal([[1, 'done', 1, 1]]);
      // and it stays: a run finds nothing to do, and deleting one deletes only that one
      expect(await run(source)).to.include({ docsTotal: 0 });
    });

    it('treats only the folder itself as under a folder: not a sibling differing in case, nor one matching its name as a pattern', async () => {
      const source = makeSourceFolder({
        'kurs/a.md': text('Brandschutz'),
        'Kurs/b.md': text('Erste Hilfe'),
        'k_rs/c.md': text('Leitern'),
        'shared/d.md': text('Gerüste'),
      });
      // a file link: a deletion of it cannot tell from the file system that it is still there
      symlinkSync(path.join(source, 'shared/d.md'), path.join(source, 'Kurs/d.md'));
      expect(await run(source)).to.include({ status: 'ok', docsDone: 5 });
      const before = await stored();

      const kurs = path.join(source, 'kurs');
      expect(await run(kurs)).to.include({ status: 'ok', docsTotal: 0 });
      expect(await stored()).to.deep.equal(before);
      const deletes = await engine.dbs.content.sql.query<{ path: string }>(
        "SELECT path FROM pipeline_queue WHERE action = 'delete'",
      );
      expect(deletes).to.deep.equal([]);

      // --force over kurs reprocesses kurs: one document
      expect(await run(kurs, true)).to.include({ status: 'ok', docsTotal: 1, docsDone: 1 });
      const docs = await engine.dbs.content.sql.query<{ source_path: string; n: number }>(
        'SELECT source_path, COUNT(*) AS n FROM documents GROUP BY source_path ORDER BY source_path',
      );
      expect(docs.map((d) => [path.relative(source, d.source_path), Number(d.n)])).to.deep.equal(
        [
          ['Kurs/b.md', 1],
          ['Kurs/d.md', 1],
          ['k_rs/c.md', 1],
          ['kurs/a.md', 1],
          ['shared/d.md', 1],
        ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
      );
    });

    it("stores a folder reached through a link under the link's path only when nothing is stored under the real path, compared exactly", async () => {
      const source = makeSourceFolder({ 'Real/a.md': text('Brandschutz'), 'real/b.md': text('Erste Hilfe') });
      symlinkSync(path.join(source, 'Real'), path.join(source, 'link'));
      await run(path.join(source, 'real'));
      await run(path.join(source, 'Real'));
      // as an earlier cpe stored `Real`'s documents when run through the link; `real` is another folder
      await engine.dbs.content.sql.run('UPDATE documents SET source_path = ? WHERE source_path = ?', [
        path.join(source, 'link/a.md'),
        path.join(source, 'Real/a.md'),
      ]);
      expect(await storedSourceRoot(engine.dbs.content.sql, path.join(source, 'link'))).to.equal(
        path.join(source, 'link'),
      );
    });
  });
}
