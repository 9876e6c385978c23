import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { embedSettings } from '../../../src/retrieval/embed-settings.js';
import { formatVerifyReport } from '../../../src/retrieval/format.js';
import { verifyIndex } from '../../../src/retrieval/verify.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';
import { insertPipeline } from '../../helpers/pipelines.js';

/** A folder with these Markdown files. */
function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-verify-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

for (const backend of testBackends()) {
  describe(`verify with two pipelines storing into two collections (${backend})`, function () {
    this.timeout(120000);
    let setup: TestSetup;
    let engine: Engine;
    const folders: string[] = [];
    beforeEach(async () => {
      setup = createTestSetup(backend);
      engine = await setup.open();
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
      for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
    });

    /** Kurs (its embed step stores into 'kurs') over two files, Standard (into 'documents') over two others. */
    async function twoPipelines() {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'Kurs', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk' },
        { name: 'embed', type: 'embed', config: { collection: 'kurs' } },
      ]);
      const kursDir = folder({
        'urlaub.md':
          '# Urlaub\n\nUrlaubsanträge stellen Sie bis zum 31. März. Resturlaub verfällt am Jahresende.\n',
        'reise.md': '# Reisekosten\n\nDienstreisen werden über das Reiseportal gebucht und abgerechnet.\n',
      });
      const standardDir = folder({
        'kantine.md': '# Kantine\n\nDie Kantine öffnet um 11:30 Uhr und schließt um 14 Uhr.\n',
        'brandschutz.md':
          '# Brandschutz\n\nFluchtwege sind freizuhalten. Feuerlöscher werden jährlich geprüft.\n',
      });
      folders.push(kursDir, standardDir);
      for (const [name, dir] of [
        ['Kurs', kursDir],
        ['Standard', standardDir],
      ] as const) {
        const plan = await planPipeline(db, engine.registry, name);
        const summary = await runPipeline(engine, { plan, sourceDir: dir, concurrency: 1 });
        expect(summary.failures, name).to.deep.equal([]);
      }
      const docs = async (dir: string) =>
        (
          await db.query<{ id: number }>('SELECT id FROM documents WHERE source_path LIKE ? ORDER BY id', [
            `${dir}%`,
          ])
        ).map((d) => Number(d.id));
      return {
        services: { db, providers: engine.providers },
        kurs: await embedSettings(db, 'Kurs'),
        standard: await embedSettings(db, 'Standard'),
        kursDocs: await docs(kursDir),
        standardDocs: await docs(standardDir),
      };
    }

    const documentsIn = async (collection: string) =>
      [
        ...new Set(
          (await (await engine.providers.vectors()).listPoints(collection)).map((p) => p.documentId),
        ),
      ].sort((a, b) => a - b);

    it("each collection expects only the documents of the pipelines that store into it; repair adds no other pipeline's", async () => {
      const { services, kurs, standard, kursDocs, standardDocs } = await twoPipelines();
      expect(kurs.collection).to.equal('kurs');
      expect(standard.collection).to.equal('documents');
      expect(await documentsIn('kurs')).to.deep.equal(kursDocs);
      expect(await documentsIn('documents')).to.deep.equal(standardDocs);

      const ofKurs = await verifyIndex(services, kurs);
      expect(ofKurs.ok, formatVerifyReport(ofKurs)).to.equal(true);
      expect(ofKurs.counts).to.include({ expected: 2, points: 2, missing: 0, foreign: 0 });
      const ofStandard = await verifyIndex(services, standard);
      expect(ofStandard.ok, formatVerifyReport(ofStandard)).to.equal(true);
      expect(ofStandard.counts).to.include({ expected: 2, points: 2, missing: 0 });
      const ofDefault = await verifyIndex(services);
      expect(ofDefault.ok, formatVerifyReport(ofDefault)).to.equal(true);

      // repair with nothing to repair leaves the other pipeline's documents where they are
      const repaired = await verifyIndex(services, { ...kurs, repair: true });
      expect(repaired.ok).to.equal(true);
      expect(await documentsIn('kurs')).to.deep.equal(kursDocs);

      // a collection no pipeline stores into: nobody's documents are missing there
      const index = await engine.providers.vectors();
      const embedder = await engine.providers.embedder();
      await index.ensureCollection('leer', {
        size: embedder.dimensions,
        distance: 'Cosine',
        model: embedder.model,
      });
      const empty = await verifyIndex(services, { collection: 'leer', repair: true });
      expect(empty.ok, formatVerifyReport(empty)).to.equal(true);
      expect(empty.counts).to.include({ expected: 0, missing: 0 });
      expect(await index.count('leer')).to.equal(0);

      // as a user sees it
      for (const args of [
        ['verify'],
        ['verify', '--pipeline=Kurs'],
        ['verify', '--pipeline=Kurs', '--repair'],
      ]) {
        const result = await runCli(args, setup.env);
        expect(result.code, `${args.join(' ')}\n${result.stdout}${result.stderr}`).to.equal(0);
        expect(result.stdout).to.contain('OK: SQL and the vector index agree.');
      }
      expect(await documentsIn('kurs')).to.deep.equal(kursDocs);
      const tooMany = await runCli(['search', 'Urlaub', '--pipeline=Kurs', '--limit=5000'], setup.env);
      expect(tooMany.code).to.equal(2);
      expect(tooMany.stderr).to.contain('cpe: limit must be at most 2000 (is 5000)');
    });

    it("still finds the lost points of its own documents (all of one document's too), and removes other pipelines' points put into it", async () => {
      const { services, kurs, kursDocs, standardDocs } = await twoPipelines();
      const index = await engine.providers.vectors();
      // one Kurs document loses all its points (the index cannot say it was ever there)
      await index.deleteByDocument('kurs', kursDocs[0]!);
      // and a Standard document's point is copied into 'kurs', as an earlier repair did
      const [point] = (await index.listPoints('documents')).filter((p) => p.documentId === standardDocs[0]);
      const vector = (await engine.providers.embedder()).embed(['Kantine']);
      await index.upsert('kurs', [
        {
          id: point!.id,
          vector: (await vector)[0]!,
          payload: { document_id: standardDocs[0], chunk_index: 0, chunk_id: point!.chunkId },
        },
      ]);
      expect(point!.id).to.equal(chunkPointId(standardDocs[0]!, 0));

      const report = await verifyIndex(services, kurs);
      expect(report.ok).to.equal(false);
      expect(report.counts).to.include({ expected: 2, missing: 1, foreign: 1 });
      expect(report.problems.join('\n')).to.contain(
        '1 points belong to documents whose pipelines store them in another collection',
      );
      const repaired = await verifyIndex(services, { ...kurs, repair: true });
      expect(repaired.ok, formatVerifyReport(repaired)).to.equal(true);
      expect(repaired.repaired).to.include({ documentsRestored: 1, pointsDeleted: 1 });
      expect(await documentsIn('kurs')).to.deep.equal(kursDocs);
      expect(await documentsIn('documents')).to.deep.equal(standardDocs);
      expect((await verifyIndex(services, { collection: 'documents' })).ok).to.equal(true);
    });
  });
}
