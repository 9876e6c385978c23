import { realpathSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { pathsUnder, storedFilePath, storedSourceRoot } from '../../../src/engine/scan.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { tempDir } from '../../helpers/temp-dir.js';

for (const backend of testBackends()) {
  describe(`a source folder reached through a symbolic link (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    let engine: Engine;
    let real: string;
    let link: string;
    beforeEach(async () => {
      setup = createTestSetup(backend);
      engine = await setup.open();
      real = realpathSync(makeSourceFolder(generatedDocuments(3)));
      link = path.join(tempDir('cpe-link-'), 'unterlagen');
      symlinkSync(real, link);
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const run = async (sourceDir: string) =>
      runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard'),
        sourceDir,
        concurrency: 2,
      });
    const storedPaths = async () =>
      (
        await engine.dbs.content.sql.query<{ source_path: string }>(
          'SELECT source_path FROM documents ORDER BY source_path',
        )
      ).map((r) => r.source_path);

    it('is one set of documents, stored under its real path, whichever way a run reaches it', async () => {
      const first = await run(link);
      expect(first).to.include({ status: 'ok', docsDone: 3 });
      const stored = await storedPaths();
      expect(stored).to.have.length(3);
      expect(stored.every((p) => p.startsWith(`${real}${path.sep}`))).to.equal(true);
      // by its real path, and through the link again: nothing new, nothing deleted
      for (const again of [real, link]) {
        const summary = await run(again);
        expect(summary, again).to.include({ status: 'ok', docsTotal: 0 });
        expect(await storedPaths()).to.deep.equal(stored);
      }
      // `cpe file` through the link names the document the runs stored
      expect(await storedFilePath(engine.dbs.content.sql, path.join(link, 'dokument-0000.md'))).to.equal(
        path.join(real, 'dokument-0000.md'),
      );
    });

    it("keeps a link's path for documents stored under it before links were resolved: not added again", async () => {
      await run(real);
      // as an earlier cpe stored them when run through the link
      const db = engine.dbs.content.sql;
      for (const p of await storedPaths())
        await db.run('UPDATE documents SET source_path = ? WHERE source_path = ?', [
          path.join(link, path.relative(real, p)),
          p,
        ]);
      expect(await storedSourceRoot(db, link)).to.equal(link);
      const summary = await run(link);
      expect(summary).to.include({ status: 'ok', docsTotal: 0 });
      const under = pathsUnder(db.dialect, 'source_path', link);
      const [{ n }] = await db.query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM documents WHERE ${under.sql}`,
        under.params,
      );
      expect(Number(n)).to.equal(3);
      expect(await storedPaths()).to.have.length(3);
    });

    it('takes a folder that is not a link, or is gone, as given', async () => {
      const db = engine.dbs.content.sql;
      expect(await storedSourceRoot(db, real)).to.equal(real);
      const gone = path.join(real, 'nicht-da');
      expect(await storedSourceRoot(db, gone)).to.equal(gone);
    });
  });
}
