import { expect } from 'chai';
import { createOllamaEmbedder } from '../../../src/embed/ollama.js';
import type { CpeError } from '../../../src/errors.js';
import { verifyIndex } from '../../../src/retrieval/verify.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import { SqlVectorIndex } from '../../../src/vectors/sql-vector-index.js';
import embed from '../../../steps/embed.js';
import { OllamaTestServer } from '../../servers/ollama-server.js';
import {
  backends,
  embedConfig,
  insertChunks,
  insertDocument,
  makeCtx,
  makeProviders,
  openTestDatabases,
  type TestDatabases,
} from './helpers.js';

const CHUNKS = Array.from({ length: 8 }, (_, i) => `Absatz ${i}: Die Anlage wird täglich geprüft.`);

for (const backend of backends()) {
  describe(`embedding through an Ollama outage (fake Ollama over HTTP) on ${backend}`, () => {
    let t: TestDatabases;
    let server: OllamaTestServer;
    let providers: ReturnType<typeof makeProviders>;
    let index: SqlVectorIndex;

    beforeEach(async () => {
      t = await openTestDatabases(backend);
      server = new OllamaTestServer({ dimensions: 8 });
      const { url } = await server.start();
      index = new SqlVectorIndex(t.db);
      providers = makeProviders(
        createOllamaEmbedder({ hosts: [url], model: 'mxbai-embed-large', dimensions: 8, retryDelayMs: 5 }),
        index,
      );
    });
    afterEach(async () => {
      await server.close();
      await t.cleanup();
    });

    const statuses = async (id: number) =>
      (
        await t.db.query<{ status: string }>(
          'SELECT status FROM chunks WHERE document_id = ? ORDER BY chunk_index',
          [id],
        )
      ).map((r) => r.status);
    const runEmbed = (id: number) =>
      embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id, sourcePath: '/src/anlage.md' },
        }),
      );

    it('27 consecutive 500s fail the step retryable with no chunk marked failed; a retry embeds them all', async () => {
      const id = await insertDocument(t.db, { sourcePath: '/src/anlage.md', title: 'Anlage' });
      await insertChunks(t.db, id, CHUNKS);
      server.faults.failNext = 27;
      server.faults.failStatus = 500;
      const error = (await runEmbed(id).then(
        () => undefined,
        (e: unknown) => e,
      )) as CpeError | undefined;
      expect(error, 'the step fails instead of ending ok with chunks failed for good').to.be.instanceOf(
        Error,
      );
      expect(error!.retryable, 'the queue retries the document').to.equal(true);
      expect(await statuses(id)).to.not.include('failed');
      // the engine's retries of the document: failing (retryable) until the outage is over, then done
      let attempts = 1;
      while (
        (await runEmbed(id).then(
          () => 'ok',
          (e: CpeError) => {
            expect(e.retryable).to.equal(true);
            return 'failed';
          },
        )) !== 'ok'
      ) {
        expect(++attempts).to.be.below(6);
      }
      expect(await statuses(id)).to.deep.equal(CHUNKS.map(() => 'embedded'));
      expect((await index.listPoints('documents')).map((p) => p.id).sort()).to.deep.equal(
        CHUNKS.map((_, i) => chunkPointId(id, i)).sort(),
      );
    });

    it('verify --repair embeds again the chunks an earlier outage left marked failed; a bad one stays failed', async () => {
      const id = await insertDocument(t.db, { sourcePath: '/src/anlage.md', title: 'Anlage' });
      const chunks = [...CHUNKS];
      chunks[6] = 'Dieser Absatz ist KAPUTT.';
      const chunkIds = await insertChunks(t.db, id, chunks);
      // chunk 6 is one the server rejects (400): marked failed, as it should be
      server.badInput = 'KAPUTT';
      server.badInputStatus = 400;
      await runEmbed(id);
      expect((await statuses(id))[6]).to.equal('failed');
      // what an outage left before cpe told it from a bad input: chunk 2 marked failed, with no vector or point
      await t.db.run(
        'DELETE FROM embedding_cache WHERE text_hash IN (SELECT text_hash FROM chunk_vectors WHERE chunk_id = ?)',
        [chunkIds[2]],
      );
      await t.db.run('DELETE FROM chunk_vectors WHERE chunk_id = ?', [chunkIds[2]]);
      await t.db.run("UPDATE chunks SET status = 'failed', embedding_model = NULL WHERE id = ?", [
        chunkIds[2],
      ]);
      await index.deletePoints('documents', [chunkPointId(id, 2)]);
      const services = { db: t.db, providers };
      const report = await verifyIndex(services);
      expect(report.counts.failedChunks).to.equal(2);

      const repaired = await verifyIndex(services, { repair: true });
      expect(repaired.repaired?.failedChunksEmbedded).to.equal(1);
      expect(repaired.after?.counts.failedChunks).to.equal(1);
      expect(repaired.ok).to.equal(true);
      const after = await statuses(id);
      expect(after[2]).to.equal('embedded');
      expect(after[6], 'the embedder rejects it again (400): it stays failed').to.equal('failed');
      const points = new Set((await index.listPoints('documents')).map((p) => p.id));
      expect(points.has(chunkPointId(id, 2)), 'the chunk embedded again has its point').to.equal(true);
      expect(points.has(chunkPointId(id, 6))).to.equal(false);
    });
  });
}
