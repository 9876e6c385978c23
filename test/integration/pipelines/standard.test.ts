import { cpSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { MAX_XML_DEPTH } from '../../../src/extract/xml.js';
import { buildContext } from '../../../src/retrieval/context.js';
import { searchChunks } from '../../../src/retrieval/search.js';
import { verifyIndex } from '../../../src/retrieval/verify.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { projectRoot } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/temp-dir.js';
import { editPackage, makePptx } from '../../unit/extract/office-fixtures.js';

const examples = path.join(projectRoot, 'examples/documents');
const corpus = path.resolve(projectRoot, '../shared/corpus');

for (const backend of testBackends()) {
  describe(`the Standard pipeline end to end on the embedded default (${backend})`, function () {
    this.timeout(300000);
    let setup: TestSetup;
    let engine: Engine;
    before(async () => {
      setup = createTestSetup(backend);
      engine = await setup.open();
    });
    after(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    it('processes the shipped German samples (PDF, DOCX, PPTX, Markdown, Latin-1 text) and answers a search', async () => {
      const source = tempDir('cpe-examples-');
      cpSync(examples, source, { recursive: true });
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard');
      const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
      expect(summary.failures).to.deep.equal([]);
      expect(summary.docsDone).to.equal(6);
      const db = engine.dbs.content.sql;
      const docs = await db.query<Record<string, any>>(
        'SELECT filename, status, is_latest FROM documents ORDER BY filename',
      );
      expect(docs.map((d) => d.status)).to.deep.equal(new Array(6).fill('done'));
      const chunks = await db.query<Record<string, any>>('SELECT status, embedding_model FROM chunks');
      expect(chunks.length).to.be.at.least(6);
      expect(chunks.every((c) => c.status === 'embedded' && c.embedding_model === 'local-hash-v2')).to.equal(
        true,
      );

      // each vector and text stored once: points refer to their chunk's cached vector, chunks name their point
      // from the start, and the extracted text is the pages' text
      const points = await db.query<Record<string, any>>(
        `SELECT vp.vector, vp.text_hash, cv.text_hash AS chunk_hash, vp.point_id, c.qdrant_id
         FROM vector_points vp JOIN chunks c ON c.id = vp.chunk_id
         LEFT JOIN chunk_vectors cv ON cv.chunk_id = vp.chunk_id AND cv.model = vp.vector_model`,
      );
      expect(points).to.have.length(chunks.length);
      expect(points.filter((p) => p.vector !== null)).to.deep.equal([]);
      expect(points.every((p) => p.text_hash === p.chunk_hash && p.point_id === p.qdrant_id)).to.equal(true);
      const extracts = await db.query<Record<string, any>>(
        'SELECT text, text_in_pages FROM document_extracts',
      );
      expect(extracts.map((e) => [Number(e.text_in_pages), e.text])).to.deep.equal(
        new Array(6).fill([1, '']),
      );

      const latin1 = await db.query<{ content: string }>(
        "SELECT c.content FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.filename = 'checkliste-seminar.txt'",
      );
      expect(latin1[0]!.content).to.contain('Teilnehmerliste an die Trainerin senden, spätestens fünf Tage');

      const steps = await engine.dbs.log.sql.query<Record<string, any>>(
        "SELECT status, reason FROM pipeline_step_runs WHERE run_id = ? AND step_name = 'analyze'",
        [summary.runId],
      );
      expect(steps).to.have.length(6);
      expect(steps.every((s) => s.status === 'skipped' && /no LLM configured/.test(s.reason))).to.equal(true);

      const hits = await searchChunks({ db, providers: engine.providers }, 'Eskalationsstufen im Konflikt', {
        limit: 3,
      });
      expect(hits[0]!.source_path).to.match(/konfliktgespraeche\.pptx$/);
      const feedback = await searchChunks(
        { db, providers: engine.providers },
        'Regeln für gutes Feedback Ich-Botschaften',
        { limit: 3 },
      );
      expect(feedback[0]!.source_path).to.match(/feedback\.md$/);

      const again = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
      expect(again).to.include({ docsTotal: 0, stepsFailed: 0 });
      expect(again.stepsOk).to.equal(1); // detect alone: unchanged files cost no step work
      const report = await verifyIndex({ db, providers: engine.providers });
      expect(report.ok, JSON.stringify(report)).to.equal(true);
    });

    it('cites the section of a chunk the query matches, not only the one the chunk starts in', async () => {
      const source = tempDir('cpe-cite-');
      writeFileSync(
        path.join(source, 'urlaubsordnung.md'),
        [
          '# Urlaubsordnung',
          '## § 1 Anspruch',
          'Jede Mitarbeiterin hat in jedem Kalenderjahr Anspruch auf bezahlten Erholungsurlaub.',
          '## § 2 Wartezeit',
          'Der volle Urlaubsanspruch entsteht erstmals nach sechsmonatiger Betriebszugehörigkeit.',
          '## § 3 Übertragung',
          'Resturlaub verfällt am 31. März des Folgejahres, wenn er nicht genommen wurde.',
        ].join('\n\n'),
      );
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard');
      const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 1 });
      expect(summary.docsDone).to.equal(1);
      const db = engine.dbs.content.sql;
      const services = { db, providers: engine.providers };
      const [hit] = await searchChunks(services, 'sechsmonatiger Betriebszugehörigkeit', { limit: 1 });
      // the three short paragraphs are one chunk, which starts in the title's section
      const rows = await db.query<{ heading_path: string }>('SELECT heading_path FROM chunks WHERE id = ?', [
        hit!.chunk_id,
      ]);
      expect(JSON.parse(rows[0]!.heading_path)).to.deep.equal(['Urlaubsordnung']);
      expect(hit!.heading_path).to.deep.equal(['§ 2 Wartezeit']);
      expect(hit!.content.slice(hit!.section_offset).startsWith('§ 2 Wartezeit')).to.equal(true);
      const [later] = await searchChunks(services, 'Resturlaub verfällt im März', { limit: 1 });
      expect(later!.heading_path).to.deep.equal(['§ 3 Übertragung']);
      const context = await buildContext(services, 'Wann verfällt Resturlaub?', { limit: 1 });
      expect(context.sources[0]!.heading_path).to.deep.equal(['§ 3 Übertragung']);
    });

    it("names a file's warnings by its source path, not by the archived copy the reader was given", async () => {
      const source = tempDir('cpe-warn-');
      const deep = `${'<p:grpSp>'.repeat(MAX_XML_DEPTH + 10)}${'</p:grpSp>'.repeat(MAX_XML_DEPTH + 10)}`;
      const pptx = editPackage(await makePptx(2), {
        'ppt/slides/slide1.xml': (old) => old.replace('</p:spTree>', `${deep}</p:spTree>`),
      });
      writeFileSync(path.join(source, 'tief.pptx'), pptx);
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard');
      const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 1 });
      expect(summary.docsDone).to.equal(1);
      const warnings = await engine.dbs.log.sql.query<{ message: string }>(
        "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn'",
        [summary.runId],
      );
      const slide = warnings.find((w) => w.message.includes('slide 1 skipped'));
      expect(slide?.message).to.contain(path.join(source, 'tief.pptx'));
      expect(slide?.message).to.not.contain('archive');
    });

    it('runs over ../shared/corpus/md and /txt', async function () {
      if (!existsSync(corpus)) this.skip(); // the corpus is a developer resource, absent for users
      const source = tempDir('cpe-corpus-');
      cpSync(path.join(corpus, 'md'), path.join(source, 'md'), { recursive: true });
      cpSync(path.join(corpus, 'txt'), path.join(source, 'txt'), { recursive: true });
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard');
      const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
      expect(summary.failures).to.deep.equal([]);
      expect(summary.docsDone).to.equal(53);
      const [{ n }] = await engine.dbs.content.sql.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.source_path LIKE ? AND c.status = 'embedded'",
        [`${source}%`],
      );
      expect(Number(n)).to.be.greaterThan(300);
    });
  });
}
