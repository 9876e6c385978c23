import { expect } from 'chai';
import { XMLValidator } from 'fast-xml-parser';
import { retractDocument } from '../../../src/engine/retract.js';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { exportGraph } from '../../../src/knowledge/graph-export.js';
import { retractDocumentKnowledge } from '../../../src/knowledge/retract.js';
import { NO_LLM_REASON, NO_VISION_REASON } from '../../../src/llm/factory.js';
import { verifyIndex } from '../../../src/retrieval/verify.js';
import { parseJsonColumn } from '../../../src/util/json.js';
import analyze from '../../../steps/analyze.js';
import entityExtract from '../../../steps/entity_extract.js';
import knowledgeDocument from '../../../steps/knowledge_document.js';
import knowledgePage from '../../../steps/knowledge_page.js';
import knowledgeSection from '../../../steps/knowledge_section.js';
import knowledgeValidate from '../../../steps/knowledge_validate.js';
import questionGenerate from '../../../steps/question_generate.js';
import relationExtract from '../../../steps/relation_extract.js';
import semanticAnalyze from '../../../steps/semantic_analyze.js';
import summarize from '../../../steps/summarize.js';
import taxonomyBuild from '../../../steps/taxonomy_build.js';
import visionAnalyze from '../../../steps/vision_analyze.js';
import { type AnthropicTestServer, startAnthropicServer } from '../../servers/anthropic-server.js';
import { type OllamaChatTestServer, startOllamaChatServer } from '../../servers/ollama-chat.js';
import { insertDocument, openTestDb, runStep, type TestDb, testProviders } from './harness.js';

const CHUNKS = [
  {
    content:
      'Der Ausbildungsvertrag wird vor Beginn der Berufsausbildung geschlossen. Die Kammer prüft den Ausbildungsvertrag.',
    headingPath: ['Ausbildung', 'Vertrag'],
    page: 1,
  },
  {
    content:
      'Die Probezeit dauert mindestens einen Monat. Während der Probezeit kann der Ausbildungsvertrag gekündigt werden.',
    headingPath: ['Ausbildung', 'Probezeit'],
    page: 1,
  },
  {
    content:
      'Der Ausbilder vermittelt die Fertigkeiten. Das Berichtsheft dokumentiert den Fortschritt der Auszubildenden.',
    headingPath: ['Ausbildung', 'Pflichten'],
    page: 2,
  },
];

const count = async (t: TestDb, sql: string, params: unknown[] = []) =>
  Number((await t.db.query<{ n: number }>(`SELECT COUNT(*) AS n FROM ${sql}`, params))[0]!.n);

const SCHULUNG_STEPS = [
  entityExtract,
  relationExtract,
  taxonomyBuild,
  semanticAnalyze,
  summarize,
  questionGenerate,
  knowledgePage,
  knowledgeSection,
  knowledgeDocument,
  knowledgeValidate,
];

describe('LLM steps on a real database', function () {
  this.timeout(60000);
  let t: TestDb;
  let anthropic: AnthropicTestServer;

  beforeEach(async () => {
    t = await openTestDb();
    anthropic = await startAnthropicServer();
  });
  afterEach(async () => {
    await anthropic.close();
    await t.close();
  });

  const claude = (extra: { embedFails?: boolean } = {}) =>
    testProviders(t.db, { anthropicApiKey: 'test-key', anthropicBaseUrl: anthropic.url }, extra);

  it('every LLM step ends skipped with the reason when no provider is configured, writing nothing', async () => {
    const doc = await insertDocument(t.db, {
      filename: 'a.md',
      chunks: CHUNKS,
      pageMetadata: { 1: { images: 2 } },
    });
    const none = testProviders(t.db, {});
    for (const plugin of [...SCHULUNG_STEPS, analyze]) {
      const run = await runStep(plugin, t.db, doc.ref, none);
      expect(run.outcome, plugin.type).to.deep.equal({ status: 'skipped', reason: NO_LLM_REASON });
    }
    const vision = await runStep(visionAnalyze, t.db, doc.ref, none);
    expect(vision.outcome).to.deep.equal({ status: 'skipped', reason: NO_VISION_REASON });
    for (const table of [
      'entities',
      'entity_relations',
      'taxonomy_terms',
      'chunk_semantics',
      'document_summaries',
      'generated_questions',
      'knowledge_items',
      'llm_cache',
    ]) {
      expect(await count(t, table), table).to.equal(0);
    }
  });

  it('entity_extract stores normalised entities with their mentions and merges them across documents', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    const b = await insertDocument(t.db, {
      filename: 'b.md',
      chunks: [
        {
          content:
            'Jeder Ausbildungsvertrag nennt die Probezeit. Die Vergütung steht im Ausbildungsvertrages-Anhang.',
        },
      ],
    });
    const runA = await runStep(entityExtract, t.db, a.ref, claude());
    expect(runA.outcome).to.equal(undefined);
    await runStep(entityExtract, t.db, b.ref, claude());

    const vertrag = await t.db.query<{ id: number; name: string; type: string; qdrant_id: string | null }>(
      "SELECT id, name, type, qdrant_id FROM entities WHERE normalized_name = 'ausbildungsvertrag'",
    );
    expect(vertrag).to.have.length(1);
    expect(vertrag[0]!.type).to.equal('CONCEPT');
    expect(vertrag[0]!.qdrant_id, 'embedded into the entities collection').to.be.a('string');
    const docs = await t.db.query<{ document_id: number }>(
      'SELECT DISTINCT document_id FROM entity_mentions WHERE entity_id = ? ORDER BY document_id',
      [vertrag[0]!.id],
    );
    expect(docs.map((d) => Number(d.document_id))).to.deep.equal([a.ref.id, b.ref.id]);
    // chunk 0 of A mentions Ausbildungsvertrag, Beginn, Berufsausbildung, Kammer
    const names = await t.db.query<{ name: string }>(
      'SELECT e.name FROM entity_mentions m JOIN entities e ON e.id = m.entity_id WHERE m.chunk_id = ? ORDER BY e.name',
      [a.chunkIds[0]],
    );
    expect(names.map((n) => n.name)).to.deep.equal([
      'Ausbildungsvertrag',
      'Beginn',
      'Berufsausbildung',
      'Kammer',
    ]);
    expect(runA.counts.llmCalls).to.equal(3);
    expect(runA.counts.tokensIn).to.be.greaterThan(0);
    expect(runA.counts.entitiesEmbedded).to.be.greaterThan(0);
    const vectors = await claude().vectors();
    expect(await vectors.count('entities')).to.equal(await count(t, 'entities'));
  });

  it('entity_extract still stores entities when embedding fails, with a warning', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    const run = await runStep(entityExtract, t.db, a.ref, claude({ embedFails: true }));
    expect(run.outcome).to.equal(undefined);
    expect(await count(t, 'entities')).to.be.greaterThan(3);
    expect(run.logs.some((l) => l.level === 'warn' && l.message.includes('not embedded'))).to.equal(true);
  });

  it('verify reports entities whose embedding failed, and --repair stores their points', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    await runStep(entityExtract, t.db, a.ref, claude()); // the entities collection exists from here on
    const b = await insertDocument(t.db, {
      filename: 'b.md',
      chunks: [{ content: 'Die Gewerkschaft verhandelt mit dem Arbeitgeberverband über den Tarifvertrag.' }],
    });
    await runStep(entityExtract, t.db, b.ref, claude({ embedFails: true }));
    const [{ n }] = await t.db.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM entities WHERE qdrant_id IS NULL',
    );
    expect(Number(n)).to.be.above(0);
    const services = { db: t.db, providers: testProviders(t.db, {}) };
    const report = await verifyIndex(services);
    expect(report.counts.entitiesWithoutPoint).to.equal(Number(n));
    expect(report.problems.some((p) => p.includes(`${n} entities have no point in 'entities'`))).to.equal(
      true,
    );
    const repaired = await verifyIndex(services, { repair: true });
    expect(repaired.repaired?.entitiesStored).to.equal(Number(n));
    expect(repaired.after?.counts.entitiesWithoutPoint).to.equal(0);
    expect(repaired.ok).to.equal(true);
  });

  it('a rerun is answered from the cache: zero calls to the server, the same rows, no duplicates', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    for (const plugin of SCHULUNG_STEPS) await runStep(plugin, t.db, a.ref, claude());
    const callsAfterFirst = anthropic.counters.requests;
    expect(callsAfterFirst).to.be.greaterThan(10);
    const snapshot = async () => ({
      entities: await count(t, 'entities'),
      mentions: await count(t, 'entity_mentions'),
      relations: await count(t, 'entity_relations'),
      semantics: await count(t, 'chunk_semantics'),
      questions: await count(t, 'generated_questions'),
      knowledge: await count(t, 'knowledge_items'),
      summaries: await count(t, 'document_summaries'),
      taxonomy: await count(t, 'document_taxonomy'),
    });
    const before = await snapshot();
    let cached = 0;
    for (const plugin of SCHULUNG_STEPS) {
      const run = await runStep(plugin, t.db, a.ref, claude());
      expect(run.counts.llmCalls ?? 0, plugin.type).to.equal(0);
      expect(run.counts.tokensIn ?? 0, plugin.type).to.equal(0);
      cached += run.counts.llmCached ?? 0;
    }
    expect(anthropic.counters.requests).to.equal(callsAfterFirst);
    expect(cached).to.be.greaterThan(10);
    expect(await snapshot()).to.deep.equal(before);
    expect(before.relations).to.be.greaterThan(0);
    expect(before.knowledge).to.be.greaterThan(0);
  });

  it('the Schulungsunterlagen steps write their rows with provenance', async () => {
    const a = await insertDocument(t.db, {
      filename: 'a.md',
      title: 'Ausbildung im Betrieb',
      chunks: CHUNKS,
    });
    for (const plugin of SCHULUNG_STEPS) {
      const run = await runStep(plugin, t.db, a.ref, claude());
      expect(run.outcome, plugin.type).to.equal(undefined);
    }
    const relations = await t.db.query<{
      s: string;
      t: string;
      relation_type: string;
      chunk_id: number;
      document_id: number;
    }>(
      `SELECT s.name AS s, tg.name AS t, r.relation_type, r.chunk_id, r.document_id FROM entity_relations r
         JOIN entities s ON s.id = r.source_entity_id JOIN entities tg ON tg.id = r.target_entity_id ORDER BY r.id`,
    );
    expect(relations[0]).to.deep.include({
      s: 'Ausbildungsvertrag',
      t: 'Beginn',
      relation_type: 'RELATED_TO',
    });
    expect(
      relations.every((r) => Number(r.document_id) === a.ref.id && a.chunkIds.includes(Number(r.chunk_id))),
    ).to.equal(true);

    const terms = await t.db.query<{ path: string; parent_id: number | null }>(
      'SELECT path, parent_id FROM taxonomy_terms ORDER BY id',
    );
    expect(terms.map((x) => x.path)).to.deep.equal(['Schulung', 'Schulung > Ausbildungsvertrag']);
    expect(terms[1]!.parent_id).to.not.equal(null);
    const placement = await t.db.query<{ confidence: number }>(
      'SELECT confidence FROM document_taxonomy WHERE document_id = ?',
      [a.ref.id],
    );
    expect(Number(placement[0]!.confidence)).to.equal(0.9);

    const semantics = await t.db.query<{
      chunk_id: number;
      keywords: string;
      sentiment: string;
      analysis_model: string;
    }>('SELECT chunk_id, keywords, sentiment, analysis_model FROM chunk_semantics ORDER BY chunk_id');
    expect(semantics).to.have.length(3);
    expect(parseJsonColumn<string[]>(semantics[0]!.keywords, [])).to.include('Ausbildungsvertrag');
    expect(semantics[0]).to.include({ sentiment: 'neutral', analysis_model: 'anthropic:claude-sonnet-4-6' });

    const summary = await t.db.query<{ summary: string }>(
      'SELECT summary FROM document_summaries WHERE document_id = ?',
      [a.ref.id],
    );
    expect(summary[0]!.summary).to.contain('Ausbildungsvertrag');
    const questions = await t.db.query<{ question: string; answer: string; chunk_id: number }>(
      'SELECT * FROM generated_questions ORDER BY id',
    );
    expect(questions.length).to.be.greaterThan(2);
    expect(questions[0]!.answer).to.equal(
      'Der Ausbildungsvertrag wird vor Beginn der Berufsausbildung geschlossen.',
    );

    const items = await t.db.query<{
      level: string;
      page_number: number | null;
      section_index: number | null;
      sources: string;
      validation: string;
      validation_reason: string;
    }>(
      'SELECT level, page_number, section_index, sources, validation, validation_reason FROM knowledge_items ORDER BY id',
    );
    const levels = new Set(items.map((i) => i.level));
    expect([...levels].sort()).to.deep.equal(['document', 'page', 'section']);
    const pageItems = items.filter((i) => i.level === 'page');
    expect(pageItems.map((i) => Number(i.page_number))).to.deep.equal([1, 1, 2]);
    expect(parseJsonColumn<number[]>(pageItems[2]!.sources, [])).to.deep.equal([a.chunkIds[2]]);
    expect(
      items.every((i) => parseJsonColumn<number[]>(i.sources, []).every((id) => a.chunkIds.includes(id))),
    ).to.equal(true);
    expect(items.every((i) => i.validation === 'grounded' && i.validation_reason.length > 0)).to.equal(true);
  });

  it('knowledge_validate marks a statement its sources do not support as unsupported, with the reason', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    await t.db.run(
      "INSERT INTO knowledge_items (document_id, level, statement, sources) VALUES (?, 'document', 'Mondraketen benötigen flüssigen Sauerstoff zum Betrieb.', ?)",
      [a.ref.id, JSON.stringify([a.chunkIds[0]])],
    );
    await t.db.run(
      "INSERT INTO knowledge_items (document_id, level, statement, sources) VALUES (?, 'document', 'Die Kammer prüft den Ausbildungsvertrag.', ?)",
      [a.ref.id, JSON.stringify([a.chunkIds[0]])],
    );
    const run = await runStep(knowledgeValidate, t.db, a.ref, claude());
    expect(run.counts).to.include({ grounded: 1, unsupported: 1 });
    const rows = await t.db.query<{ validation: string; validation_reason: string }>(
      'SELECT validation, validation_reason FROM knowledge_items ORDER BY id',
    );
    expect(rows[0]!.validation).to.equal('unsupported');
    expect(rows[0]!.validation_reason).to.match(/Begriffen/);
    expect(rows[1]!.validation).to.equal('grounded');
  });

  it("a new version: retraction removes the old version's knowledge and entities nobody mentions any more", async () => {
    const v1 = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    const other = await insertDocument(t.db, {
      filename: 'b.md',
      chunks: [{ content: 'Die Kammer berät Betriebe.' }],
    });
    for (const doc of [v1, other]) {
      for (const plugin of [entityExtract, relationExtract, taxonomyBuild, semanticAnalyze, knowledgePage])
        await runStep(plugin, t.db, doc.ref, claude());
    }
    expect(await count(t, "entities WHERE normalized_name = 'probezeit'")).to.equal(1);
    const v2 = await insertDocument(t.db, {
      filename: 'a.md',
      version: 2,
      previousVersionId: v1.ref.id,
      chunks: [{ content: 'Die Kammer prüft jeden Ausbildungsvertrag neu.' }],
    });
    const result = await retractDocumentKnowledge(t.db, v1.ref.id);
    expect(result.deletedEntities).to.be.greaterThan(0);
    expect(result.deletedEntityPointIds.length).to.equal(result.deletedEntities);
    for (const table of ['entity_mentions', 'entity_relations', 'document_taxonomy', 'knowledge_items']) {
      expect(await count(t, `${table} WHERE document_id = ?`, [v1.ref.id]), table).to.equal(0);
    }
    expect(
      await count(t, 'chunk_semantics WHERE chunk_id IN (SELECT id FROM chunks WHERE document_id = ?)', [
        v1.ref.id,
      ]),
    ).to.equal(0);
    expect(await count(t, "entities WHERE normalized_name = 'probezeit'"), 'only v1 mentioned it').to.equal(
      0,
    );
    expect(await count(t, "entities WHERE normalized_name = 'kammer'"), 'b.md still mentions it').to.equal(1);
    expect(await count(t, 'taxonomy_terms')).to.be.greaterThan(0);

    await runStep(entityExtract, t.db, v2.ref, claude());
    const kammer = await t.db.query<{ document_id: number }>(
      "SELECT DISTINCT m.document_id FROM entity_mentions m JOIN entities e ON e.id = m.entity_id WHERE e.normalized_name = 'kammer' ORDER BY m.document_id",
    );
    expect(kammer.map((k) => Number(k.document_id))).to.deep.equal([other.ref.id, v2.ref.id]);
    expect(await retractDocumentKnowledge(t.db, v1.ref.id)).to.deep.equal({
      deletedEntities: 0,
      deletedEntityPointIds: [],
      changedEntityIds: [],
      deletedTerms: 0,
    });
  });

  it('an entity that loses mentions is named and described by the ones that remain, and gets its point anew', async () => {
    const feedback = (name: string, description: string) =>
      anthropic.faults.answers.set('entities', { entities: [{ name, type: 'CONCEPT', description }] });
    const entity = async () =>
      (
        await t.db.query<{ name: string; description: string | null; qdrant_id: string | null }>(
          "SELECT name, description, qdrant_id FROM entities WHERE normalized_name = 'feedback'",
        )
      )[0]!;
    /** the point of the entity, as a search for its text finds it */
    const point = async (text: string) => {
      const providers = claude();
      const [vector] = await (await providers.embedder()).embed([text]);
      const [hit] = await (await providers.vectors()).search('entities', vector!, { limit: 1 });
      return { name: hit?.payload.name, description: hit?.payload.description };
    };
    try {
      const old = await insertDocument(t.db, {
        filename: 'a-alt.md',
        chunks: [{ content: 'Feedback ist im alten Handbuch eine jährliche Beurteilung.' }],
      });
      feedback('FEEDBACK', 'Jährliche Beurteilung (altes Handbuch).');
      await runStep(entityExtract, t.db, old.ref, claude());
      const neu = await insertDocument(t.db, {
        filename: 'b-neu.md',
        chunks: [{ content: 'Feedback ist eine Rückmeldung über beobachtetes Verhalten.' }],
      });
      feedback('Feedback', 'Rückmeldung über beobachtetes Verhalten.');
      await runStep(entityExtract, t.db, neu.ref, claude());
      // the first mention names and describes it
      expect(await entity()).to.include({
        name: 'FEEDBACK',
        description: 'Jährliche Beurteilung (altes Handbuch).',
      });

      await retractDocument(t.db, claude(), old.ref.id);
      const after = await entity();
      expect(after).to.include({ name: 'Feedback', description: 'Rückmeldung über beobachtetes Verhalten.' });
      expect(after.qdrant_id, 'embedded again').to.be.a('string');
      expect(await point('Feedback (CONCEPT): Rückmeldung über beobachtetes Verhalten.')).to.deep.equal({
        name: 'Feedback',
        description: 'Rückmeldung über beobachtetes Verhalten.',
      });

      // the document's mentions written anew (another answer): its own description replaces the one it gave before
      await t.db.run('DELETE FROM llm_cache');
      feedback('Feedback', 'Rückmeldung, neu gefasst.');
      await runStep(entityExtract, t.db, neu.ref, claude());
      expect(await entity()).to.include({ name: 'Feedback', description: 'Rückmeldung, neu gefasst.' });
      expect((await entity()).qdrant_id).to.be.a('string');
      expect(await point('Feedback (CONCEPT): Rückmeldung, neu gefasst.')).to.deep.equal({
        name: 'Feedback',
        description: 'Rückmeldung, neu gefasst.',
      });
      expect((await verifyIndex({ db: t.db, providers: claude() })).counts.entitiesWithoutPoint).to.equal(0);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('an entity only mentions from before the mention descriptions back keeps its description', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: [{ content: 'Die Kammer prüft.' }] });
    const b = await insertDocument(t.db, { filename: 'b.md', chunks: [{ content: 'Die KAMMER berät.' }] });
    anthropic.faults.answers.set('entities', {
      entities: [{ name: 'Kammer', type: 'ORGANISATION', description: 'Prüft die Verträge.' }],
    });
    try {
      await runStep(entityExtract, t.db, a.ref, claude(), { embed_entities: false });
      anthropic.faults.answers.set('entities', {
        entities: [{ name: 'KAMMER', type: 'ORGANISATION', description: 'Berät Betriebe.' }],
      });
      await runStep(entityExtract, t.db, b.ref, claude(), { embed_entities: false });
      // as a mention written before migration 0010 is: no description recorded
      await t.db.run('UPDATE entity_mentions SET description = NULL WHERE document_id = ?', [b.ref.id]);
      await retractDocumentKnowledge(t.db, a.ref.id);
      const [kammer] = await t.db.query<{ name: string; description: string }>(
        'SELECT name, description FROM entities',
      );
      expect(kammer).to.deep.equal({ name: 'KAMMER', description: 'Prüft die Verträge.' });
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('takes no name of punctuation alone for an entity, a relation or a category', async () => {
    const a = await insertDocument(t.db, {
      filename: 'feedback.md',
      chunks: [{ content: 'Feedback ist eine Rückmeldung … – oder ???' }],
    });
    const entity = (name: string) => ({ name, type: 'CONCEPT', description: 'x' });
    anthropic.faults.answers.set('entities', {
      entities: ['Feedback', 'Rückmeldung', '...', '…', '-', '???', '•', 'Stufe 2'].map(entity),
    });
    const relation = (source: string, target: string) => ({
      source,
      target,
      type: 'RELATED_TO',
      description: 'x',
      confidence: 0.9,
    });
    anthropic.faults.answers.set('relations', {
      relations: [relation('-', 'Feedback'), relation('Rückmeldung', 'Feedback'), relation('…', '•')],
    });
    anthropic.faults.answers.set('categories', {
      categories: [
        { path: ['Kommunikation', '…', 'Feedback'], confidence: 0.9 },
        { path: ['???'], confidence: 0.8 },
      ],
    });
    try {
      for (const plugin of [entityExtract, relationExtract, taxonomyBuild])
        expect((await runStep(plugin, t.db, a.ref, claude())).outcome, plugin.type).to.equal(undefined);
      const names = await t.db.query<{ name: string }>('SELECT name FROM entities ORDER BY name');
      expect(names.map((n) => n.name)).to.deep.equal(['Feedback', 'Rückmeldung', 'Stufe 2']);
      expect(await count(t, 'entity_relations')).to.equal(1);
      const paths = await t.db.query<{ path: string }>('SELECT path FROM taxonomy_terms ORDER BY path');
      expect(paths.map((p) => p.path)).to.deep.equal(['Kommunikation', 'Kommunikation > Feedback']);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it("retries a step's requests as often as its max_retries says, whatever another step's says", async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS.slice(0, 1) });
    // the endpoint's limits are shared: before, this step's 0 left every step on it without retries
    expect((await runStep(semanticAnalyze, t.db, a.ref, claude(), { max_retries: 0 })).outcome).to.equal(
      undefined,
    );
    // more than the default 5 (which capped every step's max_retries before)
    anthropic.faults.failNext(7, 429, 0);
    const run = await runStep(entityExtract, t.db, a.ref, claude(), {
      max_retries: 7,
      embed_entities: false,
    });
    expect(run.outcome).to.equal(undefined);
    expect(anthropic.counters.faults).to.equal(7);
    expect(await count(t, 'entity_mentions')).to.be.greaterThan(0);
    // and a step's 0 is its own: the first 429 fails it
    anthropic.faults.failNext(1, 429, 0);
    const b = await insertDocument(t.db, { filename: 'b.md', chunks: [{ content: 'Die Kammer berät.' }] });
    const error = await runStep(semanticAnalyze, t.db, b.ref, claude(), { max_retries: 0 }).catch(
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(CpeError);
    expect(anthropic.counters.faults).to.equal(8);
  });

  it('an answer that stays invalid after the repair fails the item: logged with the raw answer, nothing written', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    anthropic.faults.alwaysInvalid = true;
    const error = await runStep(semanticAnalyze, t.db, a.ref, claude()).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(CpeError);
    expect((error as CpeError).code).to.equal(ErrorCodes.INVALID_ANSWER);
    expect((error as CpeError).retryable).to.equal(false);
    expect(await count(t, 'chunk_semantics')).to.equal(0);
    expect(anthropic.counters.answered).to.equal(6); // 3 chunks x (answer + one repair)

    // tolerated failures: the step ends ok, the failures are counted and logged with the raw answer
    anthropic.faults.alwaysInvalid = false;
    anthropic.faults.invalidRate = 0;
    const b = await insertDocument(t.db, { filename: 'b.md', chunks: [{ content: 'Die Kammer berät.' }] });
    anthropic.faults.alwaysInvalid = true;
    const logs: string[] = [];
    const run = await runStep(semanticAnalyze, t.db, b.ref, claude(), { max_failed_items: 5 }).catch(
      (e: unknown) => {
        throw e;
      },
    );
    logs.push(...run.logs.filter((l) => l.level === 'error').map((l) => String(l.context?.raw)));
    expect(run.counts.itemsFailed).to.equal(1);
    expect(logs[0]).to.contain('ergebnis');
  });

  it('repairs invalid answers and counts the repairs', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    anthropic.faults.invalidRate = 1;
    const run = await runStep(questionGenerate, t.db, a.ref, claude());
    expect(run.counts.llmRepaired).to.equal(3);
    expect(anthropic.counters.repairs).to.equal(3);
    expect(await count(t, 'generated_questions')).to.be.greaterThan(0);
  });

  it('a 429 with Retry-After and a 529 are waited out inside the step', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS.slice(0, 1) });
    anthropic.faults.failNext(1, 429, 1);
    anthropic.faults.failNext(1, 529);
    const run = await runStep(semanticAnalyze, t.db, a.ref, claude());
    expect(run.outcome).to.equal(undefined);
    expect(anthropic.counters.faults).to.equal(2);
    expect(await count(t, 'chunk_semantics')).to.equal(1);
  });

  it('summarize map-reduces a document longer than max_input_tokens', async () => {
    const long = Array.from({ length: 12 }, (_, i) => ({
      content: `Abschnitt ${i + 1}: Die Prüfung umfasst Theorie und Praxis. ${'Der Prüfungsausschuss bewertet die Leistungen sorgfältig. '.repeat(12)}`,
    }));
    const a = await insertDocument(t.db, { filename: 'long.md', chunks: long });
    const run = await runStep(summarize, t.db, a.ref, claude(), { max_input_tokens: 600 });
    expect(run.counts.itemsIn).to.be.greaterThan(1);
    expect(run.counts.llmCalls).to.be.greaterThan(run.counts.itemsIn!);
    expect(
      summarize.estimate({
        config: { max_input_tokens: 600 },
        chunks: long.map(() => ({ tokenCount: 140 })),
        pages: 1,
      }).calls,
    ).to.be.greaterThan(1);
    expect(await count(t, 'document_summaries')).to.equal(1);
  });

  it('summarize ends when the partial summaries are too long to pair within the budget (a verbose model)', async () => {
    const long = Array.from({ length: 12 }, (_, i) => ({
      content: `Abschnitt ${i + 1}: ${'Der Prüfungsausschuss bewertet die Leistungen sorgfältig. '.repeat(12)}`,
    }));
    const a = await insertDocument(t.db, { filename: 'lang.md', chunks: long });
    anthropic.faults.summaryWords = 400; // each summary alone takes most of the 600-token budget
    try {
      const run = await runStep(summarize, t.db, a.ref, claude(), { max_input_tokens: 600 });
      expect(run.outcome).to.equal(undefined);
      expect(await count(t, 'document_summaries')).to.equal(1);
      // map calls, then rounds of pairs (each at least halving the summaries), then at most one final call
      expect(run.counts.llmCalls).to.be.at.most(run.counts.itemsIn! * 2 + 1);
    } finally {
      anthropic.faults.summaryWords = 0;
    }
  });

  it('taxonomy_build files a document once under categories the database takes for one (case or accents)', async () => {
    const a = await insertDocument(t.db, { filename: 'fuehrung.md', chunks: CHUNKS.slice(0, 1) });
    anthropic.faults.answers.set('categories', {
      categories: [
        { path: ['Führung'], confidence: 0.6 },
        { path: ['führung'], confidence: 0.9 },
      ],
    });
    try {
      const run = await runStep(taxonomyBuild, t.db, a.ref, claude());
      expect(run.outcome).to.equal(undefined);
      const placed = await t.db.query<{ name: string; confidence: number }>(
        'SELECT t.name, d.confidence FROM document_taxonomy d JOIN taxonomy_terms t ON t.id = d.term_id WHERE d.document_id = ?',
        [a.ref.id],
      );
      // one term on either database (MariaDB's collation, foldName on SQLite), the first spelling, the higher confidence
      expect(placed).to.have.length(1);
      expect(placed[0]!.name).to.equal('Führung');
      expect(Number(placed[0]!.confidence)).to.be.closeTo(0.9, 1e-6);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('stores a question or statement given twice once, and nothing of a blank one, a blank summary not at all', async () => {
    const a = await insertDocument(t.db, { filename: 'leer.md', chunks: CHUNKS.slice(0, 1) });
    anthropic.faults.answers.set('questions', {
      questions: [
        { question: 'Wer prüft den Vertrag?', answer: 'Die Kammer.' },
        { question: 'Wer  prüft den Vertrag?', answer: 'Die Kammer.' },
        { question: '     ', answer: '   ' },
      ],
    });
    anthropic.faults.answers.set('summary', { summary: '      ' });
    anthropic.faults.answers.set('statements', {
      statements: [
        { statement: 'Die Kammer prüft.', sources: ['Q1'] },
        { statement: 'Die Kammer prüft.', sources: ['Q1'] },
        { statement: '        ', sources: ['Q1'] },
      ],
    });
    try {
      await runStep(questionGenerate, t.db, a.ref, claude(), { min_chunk_tokens: 0 });
      await runStep(summarize, t.db, a.ref, claude());
      await runStep(knowledgePage, t.db, a.ref, claude());
      const questions = await t.db.query<{ question: string }>('SELECT question FROM generated_questions');
      expect(questions.map((q) => q.question)).to.deep.equal(['Wer prüft den Vertrag?']);
      expect(await count(t, 'document_summaries')).to.equal(0);
      const statements = await t.db.query<{ statement: string }>('SELECT statement FROM knowledge_items');
      expect(statements.map((k) => k.statement)).to.deep.equal(['Die Kammer prüft.']);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('takes names as the database compares them: one mention per entity and chunk, relations found by either spelling', async () => {
    const a = await insertDocument(t.db, {
      filename: 'namen.md',
      chunks: [{ content: 'Herr Müller und Herr Muller sprechen mit Frau Schulz.' }],
    });
    anthropic.faults.answers.set('entities', {
      entities: [
        { name: 'Müller', type: 'PERSON', description: 'a' },
        { name: 'Muller', type: 'PERSON', description: 'b' },
        { name: 'Schulz', type: 'PERSON', description: 'c' },
      ],
    });
    anthropic.faults.answers.set('relations', {
      relations: [
        { source: 'Muller', target: 'Schulz', type: 'RELATED_TO', description: 'x', confidence: 0.9 },
      ],
    });
    try {
      await runStep(entityExtract, t.db, a.ref, claude());
      const entities = await count(t, 'entities');
      // MariaDB's unique key takes Müller and Muller for one entity (SQLite: two); a mention each, not two of one
      expect(entities).to.equal(t.db.dialect === 'mysql' ? 2 : 3);
      expect(await count(t, 'entity_mentions')).to.equal(entities);
      await runStep(relationExtract, t.db, a.ref, claude());
      expect(await count(t, 'entity_relations')).to.equal(1);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('analyze runs entities, relations, taxonomy and chunk semantics in one step', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
    const run = await runStep(analyze, t.db, a.ref, claude());
    expect(run.outcome).to.equal(undefined);
    expect(await count(t, 'entity_mentions')).to.be.greaterThan(0);
    expect(await count(t, 'entity_relations')).to.be.greaterThan(0);
    expect(await count(t, 'document_taxonomy')).to.equal(1);
    expect(await count(t, 'chunk_semantics')).to.equal(3);
    expect(run.counts.llmCalls).to.equal(3 + 3 + 1 + 3);
    const estimate = analyze.estimate({
      config: {},
      chunks: [{ tokenCount: 30 }, { tokenCount: 30 }, { tokenCount: 30 }],
      pages: 2,
    });
    expect(estimate.calls).to.equal(10);
  });

  it('exports the graph as JSON and GraphML', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', title: 'Ausbildung', chunks: CHUNKS });
    for (const plugin of [entityExtract, relationExtract, taxonomyBuild])
      await runStep(plugin, t.db, a.ref, claude());
    const json = JSON.parse(await exportGraph(t.db, 'json'));
    const entities = json.nodes.filter((n: any) => n.kind === 'entity');
    expect(entities.length).to.equal(await count(t, 'entities'));
    expect(json.nodes.filter((n: any) => n.kind === 'term').map((n: any) => n.path)).to.deep.equal([
      'Schulung',
      'Schulung > Ausbildungsvertrag',
    ]);
    expect(json.nodes.find((n: any) => n.kind === 'document').label).to.equal('Ausbildung');
    expect(json.edges.filter((e: any) => e.kind === 'relation').length).to.equal(
      await count(t, 'entity_relations'),
    );
    expect(json.edges.filter((e: any) => e.kind === 'broader')).to.have.length(1);
    const graphml = await exportGraph(t.db, 'graphml');
    expect(graphml).to.contain('<graphml');
    expect(graphml.match(/<node /g)?.length).to.equal(json.nodes.length);
    expect(graphml.match(/<edge /g)?.length).to.equal(json.edges.length);
    expect(graphml).to.contain('<data key="n_label">Ausbildungsvertrag</data>');
  });

  it("exports only the current versions' knowledge, as well-formed GraphML whatever the names hold", async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', title: 'Ausbildung', chunks: CHUNKS });
    for (const plugin of [entityExtract, relationExtract]) await runStep(plugin, t.db, a.ref, claude());
    const before = JSON.parse(await exportGraph(t.db, 'json'));
    // a newer version on its way (not latest yet) has its own mentions and relations already
    const b = await insertDocument(t.db, {
      filename: 'a.md',
      version: 2,
      previousVersionId: a.ref.id,
      chunks: CHUNKS,
    });
    await t.db.run('UPDATE documents SET is_latest = 0 WHERE id = ?', [b.ref.id]);
    for (const plugin of [entityExtract, relationExtract]) await runStep(plugin, t.db, b.ref, claude());
    const after = JSON.parse(await exportGraph(t.db, 'json'));
    expect(after.edges.length).to.equal(before.edges.length);
    expect(after.nodes.map((n: any) => [n.id, n.mentions])).to.deep.equal(
      before.nodes.map((n: any) => [n.id, n.mentions]),
    );
    // a name with a character XML 1.0 does not allow and a carriage return (a lone surrogate does not survive
    // the database's UTF-8: it comes back as U+FFFD)
    await t.db.run('UPDATE entities SET name = ? WHERE id = (SELECT MIN(id) FROM entities)', [
      'Team \uffff <&> "x"\r\nEnde',
    ]);
    const graphml = await exportGraph(t.db, 'graphml');
    expect(XMLValidator.validate(graphml)).to.equal(true);
    expect(graphml).to.contain('Team  &lt;&amp;&gt; &quot;x&quot;&#13;\nEnde');
  });

  it('a failed request two documents share is billed once: to one step run with its repair, to the other as a cache hit', async () => {
    const same = [{ content: 'Die Kammer prüft den Ausbildungsvertrag.' }];
    const a = await insertDocument(t.db, { filename: 'a.md', title: 'Vertrag', chunks: same });
    const b = await insertDocument(t.db, { filename: 'b.md', title: 'Vertrag', chunks: same });
    anthropic.faults.alwaysInvalid = true; // the answer and its repair
    // the first attempt goes unanswered until it times out: the two documents' identical requests meet in flight
    anthropic.faults.stallNext(1, 1000);
    const providers = testProviders(t.db, {
      anthropicApiKey: 'test-key',
      anthropicBaseUrl: anthropic.url,
      timeoutMs: 300,
    });
    const runs = await Promise.all(
      [a, b].map((doc) => runStep(entityExtract, t.db, doc.ref, providers, { max_failed_items: 1 })),
    );
    expect(anthropic.counters.answered).to.equal(2); // one request: its answer and the repair
    expect(runs.map((r) => r.counts.itemsFailed)).to.deep.equal([1, 1]);
    expect(runs.reduce((n, r) => n + (r.counts.tokensIn ?? 0), 0)).to.equal(anthropic.counters.tokensIn);
    expect(runs.reduce((n, r) => n + (r.counts.tokensOut ?? 0), 0)).to.equal(anthropic.counters.tokensOut);
    expect(
      runs.map((r) => [r.counts.llmCalls ?? 0, r.counts.llmRepaired ?? 0, r.counts.llmCached ?? 0]),
    ).to.have.deep.members([
      [1, 1, 0],
      [0, 0, 1],
    ]);
  });

  it('drops an entity over a limit (empty or blank name) and cuts the list to max_entities_per_chunk, with a warning, the schema sent whole', async () => {
    const a = await insertDocument(t.db, { filename: 'grenzen.md', chunks: CHUNKS.slice(0, 1) });
    const entity = (name: string) => ({ name, type: 'CONCEPT', description: `${name}.` });
    anthropic.faults.answers.set('entities', {
      entities: [...['Kammer', 'Vertrag', 'Probezeit', 'Ausbilder'].map(entity), entity(''), entity('   ')],
    });
    try {
      const run = await runStep(entityExtract, t.db, a.ref, claude());
      expect(run.outcome).to.equal(undefined);
      expect(anthropic.counters.repairs, 'no repair paid for').to.equal(0);
      const names = await t.db.query<{ name: string }>('SELECT name FROM entities ORDER BY name');
      expect(names.map((n) => n.name)).to.deep.equal(['Ausbilder', 'Kammer', 'Probezeit', 'Vertrag']);
      const warnings = run.logs.filter((l) => l.level === 'warn').map((l) => l.message);
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.contain('dropped 2 of 6');
      expect(warnings[0]).to.contain('/entities/4/name must NOT have fewer than 1 characters');
      expect(warnings[0]).to.contain('/entities/5/name must NOT have fewer than 1 characters');
      // the model was asked with the limits (the SDK sends them as descriptions)
      const sent = anthropic.bodies[0].output_config.format.schema.properties.entities;
      expect(sent.description).to.contain('maxItems: 15');
      expect(sent.items.properties.name.description).to.contain('minLength: 1');

      const b = await insertDocument(t.db, { filename: 'viele.md', chunks: CHUNKS.slice(1, 2) });
      anthropic.faults.answers.set('entities', {
        entities: Array.from({ length: 16 }, (_, i) => entity(`Begriff ${i + 1}`)),
      });
      const many = await runStep(entityExtract, t.db, b.ref, claude());
      expect(many.outcome).to.equal(undefined);
      expect(await count(t, 'entity_mentions WHERE document_id = ?', [b.ref.id])).to.equal(15);
      expect(await count(t, "entities WHERE name = 'Begriff 16'")).to.equal(0);
      expect(many.logs.filter((l) => l.level === 'warn').map((l) => l.message)).to.deep.equal([
        'entities in the answer: cut 16 to the first 15 (maxItems)',
      ]);
      expect(anthropic.counters.repairs).to.equal(0);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('drops a relation, question or statement over a limit with a warning and keeps the others of its chunk', async () => {
    const a = await insertDocument(t.db, { filename: 'grenzen.md', chunks: CHUNKS.slice(0, 1) });
    await runStep(entityExtract, t.db, a.ref, claude()); // Ausbildungsvertrag, Beginn, Berufsausbildung, Kammer
    anthropic.faults.answers.set('relations', {
      relations: [
        {
          source: 'Kammer',
          target: 'Ausbildungsvertrag',
          type: 'RELATED_TO',
          description: 'prüft',
          confidence: 0.9,
        },
        { source: 'Kammer', target: 'Beginn', type: 'RELATED_TO', description: 'x', confidence: 1.5 },
      ],
    });
    anthropic.faults.answers.set('questions', {
      questions: [
        { question: 'Wer prüft den Vertrag?', answer: 'Die Kammer.' },
        { question: 'Wann?', answer: '' },
      ],
    });
    anthropic.faults.answers.set('statements', {
      statements: [
        { statement: 'Die Kammer prüft den Vertrag.', sources: ['Q1'] },
        { statement: 'Der Vertrag beginnt vorher.', sources: [] },
      ],
    });
    try {
      const relations = await runStep(relationExtract, t.db, a.ref, claude());
      const questions = await runStep(questionGenerate, t.db, a.ref, claude(), { min_chunk_tokens: 0 });
      const statements = await runStep(knowledgePage, t.db, a.ref, claude());
      for (const run of [relations, questions, statements]) expect(run.outcome).to.equal(undefined);
      expect(anthropic.counters.repairs).to.equal(0);
      expect(await count(t, 'entity_relations')).to.equal(1);
      expect(await count(t, 'generated_questions')).to.equal(1);
      const items = await t.db.query<{ statement: string }>('SELECT statement FROM knowledge_items');
      expect(items.map((i) => i.statement)).to.deep.equal(['Die Kammer prüft den Vertrag.']);
      const warning = (run: typeof relations) => run.logs.find((l) => l.level === 'warn')?.message;
      expect(warning(relations)).to.contain('/relations/1/confidence must be <= 1');
      expect(warning(questions)).to.contain('/questions/1/answer must NOT have fewer than 1 characters');
      expect(warning(statements)).to.contain('/statements/1/sources must NOT have fewer than 1 items');
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('neither offers nor exports the taxonomy terms of a version that failed after taxonomy_build', async () => {
    const v1 = await insertDocument(t.db, { filename: 'kurs.md', title: 'Kurs', chunks: CHUNKS.slice(0, 1) });
    anthropic.faults.answers.set('categories', {
      categories: [{ path: ['Schulung', 'Kommunikation'], confidence: 0.9 }],
    });
    try {
      await runStep(taxonomyBuild, t.db, v1.ref, claude());
      const v2 = await insertDocument(t.db, {
        filename: 'kurs.md',
        title: 'Kurs',
        version: 2,
        previousVersionId: v1.ref.id,
        chunks: CHUNKS.slice(1, 2),
      });
      anthropic.faults.answers.set('categories', {
        categories: [{ path: ['Schulung', 'Konfliktmanagement', 'Eskalation'], confidence: 0.8 }],
      });
      await runStep(taxonomyBuild, t.db, v2.ref, claude());
      // a later step failed: v1 stays the current version, v2 keeps its placement until it is retracted
      await t.db.run("UPDATE documents SET status = 'failed', is_latest = 0 WHERE id = ?", [v2.ref.id]);

      const other = await insertDocument(t.db, { filename: 'andere.md', chunks: CHUNKS.slice(2, 3) });
      anthropic.faults.answers.clear();
      await runStep(taxonomyBuild, t.db, other.ref, claude());
      const offered = JSON.stringify(anthropic.bodies.at(-1).messages);
      expect(offered).to.contain('- Schulung > Kommunikation');
      expect(offered).to.not.contain('Konfliktmanagement');

      const graph = JSON.parse(await exportGraph(t.db, 'json'));
      expect(graph.nodes.filter((n: any) => n.kind === 'term').map((n: any) => n.path)).to.deep.equal([
        'Schulung',
        'Schulung > Kommunikation',
        'Schulung > Ausbilder',
      ]);
      const terms = new Set(graph.nodes.map((n: any) => n.id));
      expect(graph.edges.every((e: any) => terms.has(e.source) && terms.has(e.target))).to.equal(true);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('files categories that differ only in case under one term on either database, in the first spelling', async () => {
    const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS.slice(0, 1) });
    const b = await insertDocument(t.db, { filename: 'b.md', chunks: CHUNKS.slice(1, 2) });
    try {
      anthropic.faults.answers.set('categories', {
        categories: [{ path: ['Schulung', 'Kommunikation'], confidence: 0.9 }],
      });
      await runStep(taxonomyBuild, t.db, a.ref, claude());
      anthropic.faults.answers.set('categories', {
        categories: [{ path: ['schulung', 'KOMMUNIKATION', 'Feedback'], confidence: 0.8 }],
      });
      await runStep(taxonomyBuild, t.db, b.ref, claude());
      const terms = await t.db.query<{ name: string; path: string }>(
        'SELECT name, path FROM taxonomy_terms ORDER BY id',
      );
      expect(terms).to.deep.equal([
        { name: 'Schulung', path: 'Schulung' },
        { name: 'Kommunikation', path: 'Schulung > Kommunikation' },
        { name: 'Feedback', path: 'Schulung > Kommunikation > Feedback' },
      ]);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('stores questions and statements that differ only in Unicode normalisation once, in NFC', async () => {
    const a = await insertDocument(t.db, { filename: 'nfc.md', chunks: CHUNKS.slice(0, 1) });
    const question = 'Wozu dient die Übung?';
    const statement = 'Die Übung vertieft den Ausbildungsvertrag.';
    anthropic.faults.answers.set('questions', {
      questions: [
        { question: question.normalize('NFD'), answer: 'Zum Üben.'.normalize('NFD') },
        { question, answer: 'Zum Üben.' },
      ],
    });
    anthropic.faults.answers.set('statements', {
      statements: [
        { statement: statement.normalize('NFD'), sources: ['Q1'] },
        { statement, sources: ['Q1'] },
      ],
    });
    try {
      await runStep(questionGenerate, t.db, a.ref, claude(), { min_chunk_tokens: 0 });
      await runStep(knowledgePage, t.db, a.ref, claude());
      const questions = await t.db.query<{ question: string; answer: string }>(
        'SELECT question, answer FROM generated_questions',
      );
      expect(questions).to.deep.equal([{ question, answer: 'Zum Üben.' }]);
      const items = await t.db.query<{ statement: string }>('SELECT statement FROM knowledge_items');
      expect(items.map((i) => i.statement)).to.deep.equal([statement]);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  it('a blank summary ends summarize skipped saying so, the call it cost recorded', async () => {
    const a = await insertDocument(t.db, { filename: 'leer.md', chunks: CHUNKS.slice(0, 1) });
    anthropic.faults.answers.set('summary', { summary: '   \n  ' });
    try {
      const run = await runStep(summarize, t.db, a.ref, claude());
      expect(run.outcome).to.deep.equal({ status: 'skipped', reason: 'the model returned a blank summary' });
      expect(run.counts).to.include({
        llmCalls: 1,
        tokensIn: anthropic.counters.tokensIn,
        tokensOut: anthropic.counters.tokensOut,
      });
      expect(await count(t, 'document_summaries')).to.equal(0);
    } finally {
      anthropic.faults.answers.clear();
    }
  });

  describe('with Ollama chat', () => {
    let ollama: OllamaChatTestServer;
    beforeEach(async () => {
      ollama = await startOllamaChatServer();
    });
    afterEach(() => ollama.close());

    it('a step config can choose provider ollama and a model', async () => {
      const a = await insertDocument(t.db, { filename: 'a.md', chunks: CHUNKS });
      const providers = testProviders(t.db, {
        anthropicApiKey: 'k',
        anthropicBaseUrl: anthropic.url,
        ollamaHosts: [ollama.url],
      });
      await runStep(semanticAnalyze, t.db, a.ref, providers, { provider: 'ollama', model: 'qwen-test:7b' });
      expect(anthropic.counters.requests).to.equal(0);
      expect(ollama.state.counters.answered).to.equal(3);
      expect(ollama.state.bodies[0].model).to.equal('qwen-test:7b');
      const models = await t.db.query<{ analysis_model: string }>(
        'SELECT DISTINCT analysis_model FROM chunk_semantics',
      );
      expect(models.map((m) => m.analysis_model)).to.deep.equal(['ollama:qwen-test:7b']);
    });
  });
});
