import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { searchChunks } from '../../../src/retrieval/search.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** file -> its first content, what a bad save leaves of it, and the reason its new version fails with */
const SAVES: Record<string, { before: string; after: Buffer; reason: string }> = {
  'null.md': {
    before: '# Leitern\n\nLeitern werden vor jeder Benutzung auf Schäden geprüft.\n',
    after: Buffer.alloc(0),
    reason: 'empty file',
  },
  'notepad.txt': {
    before: 'Wichtiger Inhalt über Brandschutz.\n',
    after: BOM,
    reason: 'no text (only a byte order mark)',
  },
  'leer.txt': {
    before: 'Die Unterweisung zu Gefahrstoffen findet jährlich statt.\n',
    after: Buffer.from('   \n\n\t \n'),
    reason: 'no text (only white space)',
  },
  'bom-leer.md': {
    before: '# Erste Hilfe\n\nDer Verbandkasten hängt neben der Tür.\n',
    after: Buffer.concat([BOM, Buffer.from(' \r\n\r\n')]),
    reason: 'no text (only a byte order mark and white space)',
  },
  'kopf.md': {
    before: '---\ntitle: Fluchtwege\n---\nFluchtwege sind jederzeit freizuhalten.\n',
    after: Buffer.from('---\ntitle: x\n---\n<!-- nur Kommentar -->\n'),
    reason: 'no text (only front matter and markup that is not shown, such as comments)',
  },
};

/** a word of each file's first content, found only there */
const WORDS: Record<string, string> = {
  'null.md': 'Leitern',
  'notepad.txt': 'Brandschutz',
  'leer.txt': 'Gefahrstoffen',
  'bom-leer.md': 'Verbandkasten',
  'kopf.md': 'Fluchtwege',
};

for (const backend of testBackends()) {
  describe(`a new version of a text file without text (${backend})`, function () {
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

    const run = async (sourceDir: string) =>
      runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard'),
        sourceDir,
        concurrency: 2,
      });
    /** the versions of a file as [version, status, latest, has chunks] */
    const versions = async (file: string) =>
      (
        await engine.dbs.content.sql.query<Record<string, any>>(
          `SELECT d.version, d.status, d.is_latest,
             (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
           FROM documents d WHERE d.source_path = ? ORDER BY d.version`,
          [file],
        )
      ).map((r) => [Number(r.version), r.status, Number(r.is_latest), Number(r.chunks) > 0]);

    it('fails with its reason, as an emptied file does, and leaves the previous version current and searchable', async () => {
      const source = makeSourceFolder(
        Object.fromEntries(Object.entries(SAVES).map(([name, save]) => [name, save.before])),
      );
      expect(await run(source)).to.include({ status: 'ok', docsDone: 5 });
      for (const [name, save] of Object.entries(SAVES)) writeFileSync(path.join(source, name), save.after);

      const summary = await run(source);
      expect(summary).to.include({ docsDone: 0, docsFailed: 5 });
      const failures = new Map(summary.failures.map((f) => [path.basename(f.path), f.error]));
      const db = engine.dbs.content.sql;
      for (const [name, save] of Object.entries(SAVES)) {
        const file = path.join(source, name);
        const reason = `${file}: ${save.reason}`;
        expect(failures.get(name), name).to.contain(reason);
        expect(await versions(file), name).to.deep.equal([
          [1, 'done', 1, true],
          [2, 'failed', 0, false],
        ]);
        // in the queue (cpe status, cpe retry) and in ki_dev's run log
        const [item] = await db.query<{ status: string; last_error: string }>(
          'SELECT status, last_error FROM pipeline_queue WHERE path = ? ORDER BY id DESC LIMIT 1',
          [file],
        );
        expect([item!.status, item!.last_error], name).to.satisfy(
          ([status, error]: [string, string]) => status === 'failed' && error.includes(reason),
        );
        const logged = await engine.dbs.log.sql.query<{ message: string }>(
          "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'error'",
          [summary.runId],
        );
        expect(
          logged.some((l) => l.message.includes(reason)),
          name,
        ).to.equal(true);
        // the previous version still answers
        const hits = await searchChunks({ db, providers: engine.providers }, WORDS[name]!, { limit: 1 });
        expect(hits[0]?.content, name).to.contain(WORDS[name]);
      }
      // the failure stays until the file changes again
      expect((await run(source)).docsTotal).to.equal(0);
    });

    it('stores a first version without text as extracted, and a later one with text as usual', async () => {
      const source = makeSourceFolder({});
      const file = path.join(source, 'neu.txt');
      writeFileSync(file, Buffer.concat([BOM, Buffer.from('\n \n')]));
      expect(await run(source)).to.include({ status: 'ok', docsDone: 1, docsFailed: 0 });
      writeFileSync(file, 'Erst jetzt steht hier etwas über Brandschutz.\n');
      expect(await run(source)).to.include({ status: 'ok', docsDone: 1, docsFailed: 0 });
      expect(await versions(file)).to.deep.equal([
        [1, 'done', 0, false],
        [2, 'done', 1, true],
      ]);
    });
  });
}
