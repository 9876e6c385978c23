import { expect } from 'chai';
import { createLocalEmbedder } from '../../../src/embed/local-hash.js';
import type { Embedder } from '../../../src/embed/types.js';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import type { CpeError } from '../../../src/errors.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import { SqlVectorIndex } from '../../../src/vectors/sql-vector-index.js';
import embed from '../../../steps/embed.js';
import vectorStore from '../../../steps/vector_store.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';
import { OllamaTestServer } from '../../servers/ollama-server.js';
import {
  backends,
  insertChunks,
  insertDocument,
  makeCtx,
  makeProviders,
  openTestDatabases,
  type TestDatabases,
} from './helpers.js';

const STEPS = [
  { name: 'detect', type: 'detect' },
  { name: 'extract', type: 'extract' },
  { name: 'chunk', type: 'chunk' },
  { name: 'embed', type: 'embed', config: { model: 'custom-embed' } },
  { name: 'collection_setup', type: 'collection_setup', dependsOn: ['detect'] },
  { name: 'vector_store', type: 'vector_store', dependsOn: ['embed', 'collection_setup'] },
];

for (const backend of testBackends()) {
  describe(`a pipeline whose embed step names its model, with a vector_store step (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    let server: OllamaTestServer;
    let engine: Engine;
    beforeEach(async () => {
      server = new OllamaTestServer({ dimensions: 8 });
      const { url } = await server.start();
      setup = createTestSetup(backend);
      engine = await setup.open({ ollamaHosts: [url] });
    });
    afterEach(async () => {
      await engine?.close();
      await server.close();
      await setup?.cleanup();
    });

    it("stores the embed step's vectors; the entities collection keeps the configured embedder's model", async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'eigenes-modell', STEPS);
      const source = makeSourceFolder({
        'feedback.md': '# Feedback\n\nDie Schulung war gut.\n\n## Verbesserungen\n\nMehr Pausen, bitte.\n',
      });
      const summary = await runPipeline(engine, {
        plan: await planPipeline(db, engine.registry, 'eigenes-modell'),
        sourceDir: source,
        concurrency: 1,
      });
      expect(summary).to.include({ status: 'ok', docsDone: 1, docsFailed: 0 });
      const stamps = await db.query<{ name: string; model: string }>(
        'SELECT name, model FROM vector_collections ORDER BY name',
      );
      expect(stamps.map((s) => [s.name, s.model])).to.deep.equal([
        ['documents', 'custom-embed'],
        ['entities', engine.config.embedModel ?? 'mxbai-embed-large'],
        ['mail', 'custom-embed'],
      ]);
      const [doc] = await db.query<{ id: number }>('SELECT id FROM documents');
      const chunks = await db.query<{ chunk_index: number }>(
        'SELECT chunk_index FROM chunks WHERE document_id = ? ORDER BY chunk_index',
        [doc!.id],
      );
      expect(chunks.length).to.be.greaterThan(0);
      const index = await engine.providers.vectors();
      expect((await index.listPoints('documents')).map((p) => p.id).sort()).to.deep.equal(
        chunks.map((c) => chunkPointId(Number(doc!.id), Number(c.chunk_index))).sort(),
      );
    });
  });
}

/** The local embedder under another model's name (as Ollama serves many models). */
const namedEmbedder = (model: string): Embedder => ({ ...createLocalEmbedder(), model });

for (const backend of backends()) {
  describe(`vector_store told to store another model's vectors than the chunks have (${backend})`, () => {
    let t: TestDatabases;
    beforeEach(async () => {
      t = await openTestDatabases(backend);
    });
    afterEach(async () => {
      await t.cleanup();
    });

    it('fails the step naming both models and leaves the index as it was', async () => {
      const index = new SqlVectorIndex(t.db);
      const providers = {
        ...makeProviders(createLocalEmbedder(), index),
        embedder: async (options?: { model?: string }) => namedEmbedder(options?.model ?? 'local-hash-v2'),
      };
      const sourcePath = '/src/feedback.md';
      const id = await insertDocument(t.db, { sourcePath });
      await insertChunks(t.db, id, ['Die Schulung war gut.', 'Mehr Pausen, bitte.']);
      const stepTypes = ['detect', 'extract', 'chunk', 'embed', 'vector_store'];
      const document = { id, sourcePath };
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: { model: 'custom-embed', batch_size: 256, max_embed_chars: 800, collection: 'documents' },
          type: 'embed',
          document,
          stepTypes,
        }),
      );
      const stored = (config: { collection: string; model?: string }) =>
        vectorStore.run(
          makeCtx({
            db: t.db,
            providers,
            config,
            type: 'vector_store',
            document,
            stepTypes,
            stepConfigs: { embed: [{ model: 'custom-embed' }] },
          }),
        );
      const error = (await stored({ collection: 'other', model: 'local-hash-v2' }).catch(
        (e: unknown) => e,
      )) as CpeError;
      expect(error.code).to.equal('STEP_FAILED');
      expect(error.message).to.contain(`document ${id} has no vectors of local-hash-v2 to store`);
      expect(error.message).to.contain('embedded with custom-embed');
      expect(await index.count('other')).to.equal(0);
      // without a model of its own it stores the embed step's
      await stored({ collection: 'documents' });
      expect(await index.count('documents')).to.equal(2);
    });
  });
}
