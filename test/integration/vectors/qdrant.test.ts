import { expect } from 'chai';
import { createLocalEmbedder } from '../../../src/embed/local-hash.js';
import { CpeError } from '../../../src/errors.js';
import { type EntityRow, storeEntityPoints } from '../../../src/knowledge/entities.js';
import { searchChunks } from '../../../src/retrieval/search.js';
import { verifyIndex } from '../../../src/retrieval/verify.js';
import { createVectorIndex } from '../../../src/vectors/create-vector-index.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import type { QdrantVectorIndex } from '../../../src/vectors/qdrant-vector-index.js';
import embed from '../../../steps/embed.js';
import indexOptimize from '../../../steps/index_optimize.js';
import { QdrantTestServer } from '../../servers/qdrant-server.js';
import {
  backends,
  embedConfig,
  insertChunks,
  insertDocument,
  makeCtx,
  makeProviders,
  newVersion,
  openTestDatabases,
  type TestDatabases,
} from './helpers.js';

for (const backend of backends()) {
  describe(`Qdrant index (real client, fake Qdrant) with stamps on ${backend}`, () => {
    let t: TestDatabases;
    let server: QdrantTestServer;
    let url: string;
    let index: QdrantVectorIndex;

    beforeEach(async () => {
      t = await openTestDatabases(backend);
      server = new QdrantTestServer();
      url = (await server.start()).url;
      index = createVectorIndex({ qdrantUrl: url, db: t.db }) as QdrantVectorIndex;
      (index as any).retryDelayMs = 5;
    });
    afterEach(async () => {
      await server.close();
      await t.cleanup();
    });

    it('creates collections with size and distance, stamps them, refuses another model or size', async () => {
      const spec = { size: 1024, distance: 'Cosine' as const, model: 'local-hash-v1' };
      await index.ensureCollection('documents', spec);
      expect(server.collections.get('documents')).to.include({ size: 1024, distance: 'Cosine' });
      const [stamp] = await t.db.query<any>(`SELECT * FROM vector_collections WHERE backend = 'qdrant'`);
      expect(stamp).to.include({ name: 'documents', model: 'local-hash-v1', location: url });

      const fresh = createVectorIndex({ qdrantUrl: url, db: t.db });
      const error = await fresh
        .ensureCollection('documents', { ...spec, model: 'mxbai-embed-large' })
        .catch((e) => e);
      expect((error as CpeError).code).to.equal('COLLECTION_MISMATCH');
      expect((error as Error).message).to.include(
        "collection 'documents' (qdrant) was built with local-hash-v1",
      );

      // a collection someone else made with another size
      server.collections.set('mail', {
        size: 768,
        distance: 'Cosine',
        points: new Map(),
        payloadIndexes: new Map(),
      });
      const sizeError = await fresh.ensureCollection('mail', spec).catch((e) => e);
      expect((sizeError as CpeError).code).to.equal('COLLECTION_MISMATCH');
      expect((sizeError as Error).message).to.include('768 dimensions');
      // ... and one with the right size is adopted
      server.collections.set('entities', {
        size: 1024,
        distance: 'Cosine',
        points: new Map(),
        payloadIndexes: new Map(),
      });
      await fresh.ensureCollection('entities', spec);
      expect((await fresh.describeCollection('entities')).model).to.equal('local-hash-v1');
      // deleting from a collection that does not exist is not an error (nothing is left behind)
      await fresh.deleteByDocument('never-made', 1);
      await fresh.deletePoints('never-made', [chunkPointId(1, 0)]);
    });

    it('refuses a collection with points that another data set made, and leaves its points alone; an empty one is taken on', async () => {
      // data set A (its own ki_content) stores its points into 'documents' and 'entities' of the shared Qdrant
      const other = await openTestDatabases(backend);
      try {
        const indexA = createVectorIndex({ qdrantUrl: url, db: other.db });
        const servicesA = { db: other.db, providers: makeProviders(createLocalEmbedder(), indexA) };
        const docA = await insertDocument(other.db, { sourcePath: '/a/plan.md', title: 'Plan' });
        await insertChunks(other.db, docA, ['Dienstplan der Station.', 'Urlaubsplanung im Sommer.']);
        await embed.run(
          makeCtx({
            db: other.db,
            providers: servicesA.providers,
            config: embedConfig,
            type: 'embed',
            document: { id: docA, sourcePath: '/a/plan.md' },
          }),
        );
        await other.db.run('INSERT INTO entities (name, normalized_name, type) VALUES (?, ?, ?)', [
          'Station',
          'station',
          'CONCEPT',
        ]);
        const entityRows = await other.db.query<EntityRow>(
          'SELECT id, name, normalized_name, type, description FROM entities',
        );
        await storeEntityPoints(servicesA, entityRows);
        const pointsOfA = () => ({
          documents: server.points('documents').map((p) => p.id),
          entities: server.points('entities').map((p) => p.id),
        });
        const before = pointsOfA();
        expect(before.documents).to.have.length(2);
        expect(before.entities).to.have.length(1);

        // data set B, moved to the same Qdrant (README: verify --repair once with the new CPE_QDRANT_URL)
        const servicesB = { db: t.db, providers: makeProviders(createLocalEmbedder(), index) };
        const docB = await insertDocument(t.db, { sourcePath: '/b/notiz.md', title: 'Notiz' });
        await insertChunks(t.db, docB, ['Notizen zur Teambesprechung.']);
        await t.db.run("UPDATE documents SET status = 'done' WHERE id = ?", [docB]);
        const local = createLocalEmbedder();
        const spec = { size: local.dimensions, distance: 'Cosine' as const, model: local.model };
        const embedB = () =>
          embed.run(
            makeCtx({
              db: t.db,
              providers: servicesB.providers,
              config: embedConfig,
              type: 'embed',
              document: { id: docB, sourcePath: '/b/notiz.md' },
            }),
          );
        const attempts: Array<[string, () => Promise<unknown>]> = [
          ['verify', () => verifyIndex(servicesB)],
          ['verify --repair', () => verifyIndex(servicesB, { repair: true })],
          ['search', () => searchChunks(servicesB, 'Dienstplan', { limit: 5 })],
          ['ensure', () => index.ensureCollection('documents', spec)],
          ['embed', embedB],
        ];
        for (const [what, attempt] of attempts) {
          const error = (await attempt().then(
            () => undefined,
            (e: unknown) => e,
          )) as CpeError | undefined;
          expect(error, what).to.be.instanceOf(CpeError);
          expect(error!.code, what).to.equal('COLLECTION_MISMATCH');
          expect(error!.message, what)
            .to.include(`collection 'documents' in Qdrant ${url} holds 2 points, but this data set`)
            .and.include("set config.collection on the pipeline's embed step")
            .and.include(`delete it in Qdrant (DELETE ${url}/collections/documents)`);
          expect(pointsOfA(), what).to.deep.equal(before);
        }
        const entities = (await index.ensureCollection('entities', spec).catch((e: unknown) => e)) as Error;
        expect(entities.message)
          .to.include("collection 'entities' in Qdrant")
          .and.include('holds 1 point, but this data set')
          .and.include("the name of the 'entities' collection is fixed");
        expect(pointsOfA()).to.deep.equal(before);
        expect(
          await t.db.query(`SELECT name FROM vector_collections WHERE backend = 'qdrant'`),
        ).to.deep.equal([]);
        // A's own data set goes on as before
        expect((await verifyIndex(servicesA)).ok).to.equal(true);

        // the collection really left over and deleted in Qdrant: B makes it again and stores its points into it
        server.collections.delete('documents');
        server.collections.get('entities')!.points.clear();
        await embedB();
        expect(server.points('documents').map((p) => p.id)).to.deep.equal([chunkPointId(docB, 0)]);
        expect((await verifyIndex(servicesB)).ok).to.equal(true);
        // the emptied 'entities' collection is taken on
        await index.ensureCollection('entities', spec);
        expect((await index.describeCollection('entities')).model).to.equal(local.model);
      } finally {
        await other.cleanup();
      }
    });

    it('embed stores points idempotently; a new version replaces; a delete removes; index_optimize indexes payload', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const v1 = await insertDocument(t.db, { sourcePath: '/src/q.md', title: 'Qualität' });
      await insertChunks(t.db, v1, [
        { content: 'Qualitätssicherung beginnt beim Wareneingang.', headingPath: ['QS'], page: 2 },
        'Reklamationen werden binnen 48 Stunden bearbeitet.',
      ]);
      const run = (id: number, action: 'new' | 'update' | 'delete' = 'new') =>
        embed.run(
          makeCtx({
            db: t.db,
            providers,
            config: embedConfig,
            type: 'embed',
            document: { id, sourcePath: '/src/q.md', action },
          }),
        );
      await run(v1);
      const first = server.points('documents').map((p) => ({ id: p.id, payload: p.payload }));
      expect(first.map((p) => p.id).sort()).to.deep.equal([chunkPointId(v1, 0), chunkPointId(v1, 1)].sort());
      expect(first.find((p) => p.id === chunkPointId(v1, 0))?.payload).to.deep.include({
        document_id: v1,
        document_title: 'Qualität',
        chunk_index: 0,
        content: 'Qualitätssicherung beginnt beim Wareneingang.',
        heading_path: ['QS'],
        source_path: '/src/q.md',
      });
      await run(v1);
      expect(server.points('documents').map((p) => ({ id: p.id, payload: p.payload }))).to.deep.equal(first);

      await t.db.run(`UPDATE documents SET status = 'done' WHERE id = ?`, [v1]);
      const v2 = await newVersion(t.db, v1, '/src/q.md', 'Qualität');
      await insertChunks(t.db, v2, ['Qualitätssicherung beginnt beim Wareneingang.']);
      await run(v2, 'update');
      expect(server.points('documents').map((p) => p.id)).to.deep.equal([chunkPointId(v2, 0)]);

      const hits = await searchChunks({ db: t.db, providers }, 'Wareneingang Qualitätssicherung', {
        limit: 5,
      });
      expect(hits.map((h) => [h.document_id, h.chunk_index])).to.deep.equal([[v2, 0]]);

      const optimize = makeCtx({
        db: t.db,
        providers,
        config: { collections: ['documents'] },
        type: 'index_optimize',
      });
      await indexOptimize.run(optimize as any);
      expect([...server.collections.get('documents')!.payloadIndexes.entries()]).to.deep.include.members([
        ['document_id', 'integer'],
        ['chunk_index', 'integer'],
        ['source_path', 'keyword'],
      ]);

      await t.db.run(`UPDATE documents SET status = 'deleted' WHERE id = ?`, [v2]);
      await run(v2, 'delete');
      expect(server.points('documents')).to.have.length(0);
    });

    it('retries through 500s on every third request and through dropped connections', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const id = await insertDocument(t.db, { sourcePath: '/src/f.txt' });
      await insertChunks(
        t.db,
        id,
        Array.from({ length: 300 }, (_, i) => `Absatz ${i} über Fehlertoleranz.`),
      );
      server.faults.failEvery = 3;
      server.faults.dropNext = 1;
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id, sourcePath: '/src/f.txt' },
        }),
      );
      expect(server.points('documents')).to.have.length(300);
      expect(server.counters.failed).to.be.greaterThan(0);
      expect(server.counters.dropped).to.equal(1);
    });

    it('times out a Qdrant that does not answer, retries, then fails retryable naming the operation', async () => {
      const slow = createVectorIndex({
        qdrantUrl: url,
        db: t.db,
        timeoutMs: 100,
        maxRetries: 1,
      }) as QdrantVectorIndex;
      (slow as any).retryDelayMs = 5;
      server.faults.delayMs = 1000;
      const error = await slow.count('documents').catch((e) => e);
      expect(error).to.be.instanceOf(CpeError);
      expect((error as CpeError).retryable).to.equal(true);
      expect((error as Error).message).to.match(
        /count 'documents' failed after 2 attempts: no answer within 0\.1 s \(timed out\)/,
      );
      expect(server.requests('POST /collections/:name/points/count')).to.equal(2);
    });

    it('waits the Retry-After a 429 or 503 asks for before trying again', async () => {
      await index.ensureCollection('documents', { size: 4, distance: 'Cosine', model: 'm' });
      for (const status of [429, 503]) {
        server.resetCounters();
        server.faults.failNext = 1;
        server.faults.failStatus = status;
        server.faults.failRetryAfter = 1;
        const began = Date.now();
        expect(await index.count('documents')).to.equal(0);
        expect(server.requests('POST /collections/:name/points/count'), String(status)).to.equal(2);
        // the index's own backoff is 5 ms: a wait this long is the server's second (a lower bound, never flaky)
        expect(Date.now() - began, String(status)).to.be.at.least(990);
      }
      server.faults.failRetryAfter = undefined;
    });

    it("waits a 429's whole Retry-After, not its first character (the client reads '1.5' as 1 s)", async () => {
      await index.ensureCollection('documents', { size: 4, distance: 'Cosine', model: 'm' });
      server.resetCounters();
      server.faults.failNext = 1;
      server.faults.failStatus = 429;
      server.faults.failRetryAfter = 1.5;
      const began = Date.now();
      expect(await index.count('documents')).to.equal(0);
      expect(server.requests('POST /collections/:name/points/count')).to.equal(2);
      expect(Date.now() - began).to.be.at.least(1490);
    });

    it('a 429 whose Retry-After is an HTTP date is retried after that date, not failed for good', async () => {
      await index.ensureCollection('documents', { size: 4, distance: 'Cosine', model: 'm' });
      server.resetCounters();
      server.faults.failNext = 1;
      server.faults.failStatus = 429;
      // HTTP dates have whole seconds: this one is 1 to 2 s ahead
      server.faults.failRetryAfter = new Date(Date.now() + 2000).toUTCString();
      const began = Date.now();
      expect(await index.count('documents')).to.equal(0);
      expect(server.requests('POST /collections/:name/points/count')).to.equal(2);
      expect(Date.now() - began).to.be.at.least(900);

      // a 429 that lasts: after the retries, a retryable error saying it was rate limited (the queue retries)
      const brief = createVectorIndex({ qdrantUrl: url, db: t.db, maxRetries: 1 }) as QdrantVectorIndex;
      server.faults.failNext = 2;
      server.faults.failRetryAfter = new Date(Date.now() - 60_000).toUTCString();
      const error = (await brief.count('documents').catch((e: unknown) => e)) as CpeError;
      expect(error).to.be.instanceOf(CpeError);
      expect(error.retryable).to.equal(true);
      expect(error.message).to.include('HTTP 429');
      server.faults.failRetryAfter = undefined;
    });

    it('a collection dropped while documents store points: every one of them fails retryable, then stores', async () => {
      const spec = { size: 4, distance: 'Cosine' as const, model: 'm' };
      await index.ensureCollection('documents', spec);
      server.collections.delete('documents');
      const point = (documentId: number) => ({
        id: chunkPointId(documentId, 0),
        vector: Float32Array.from([1, 0, 0, 0]),
        payload: { document_id: documentId, chunk_index: 0 },
      });
      const results = await Promise.allSettled([1, 2, 3].map((d) => index.upsert('documents', [point(d)])));
      for (const result of results) {
        expect(result.status).to.equal('rejected');
        const error = (result as PromiseRejectedResult).reason as CpeError;
        expect(error.retryable, error.message).to.equal(true);
        expect(error.message).to.include("collection 'documents' disappeared");
      }
      // each document's retry: the collection is made again, the points stored
      for (const d of [1, 2, 3]) {
        await index.ensureCollection('documents', spec, { log: { warn: () => undefined } });
        await index.upsert('documents', [point(d)]);
      }
      expect(server.points('documents')).to.have.length(3);
    });

    it('a collection cpe had made and filled, found missing, is made again with a warning naming verify --repair', async () => {
      const spec = { size: 4, distance: 'Cosine' as const, model: 'm' };
      const warnings: string[] = [];
      const log = { warn: (message: string) => warnings.push(message) };
      await index.ensureCollection('documents', spec, { log });
      expect(warnings, 'made the first time: nothing to warn about').to.deep.equal([]);
      server.collections.delete('documents');
      // a later process (nothing ensured yet), whose index warns through the logger it was given
      const later = createVectorIndex({ qdrantUrl: url, db: t.db, log });
      await later.ensureCollection('documents', spec);
      expect(server.collections.has('documents')).to.equal(true);
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.include("collection 'documents' was missing").and.include('cpe verify --repair');
      // a step's own logger wins over the index's
      server.collections.delete('documents');
      const stepLog: string[] = [];
      await createVectorIndex({ qdrantUrl: url, db: t.db, log }).ensureCollection('documents', spec, {
        log: { warn: (message) => stepLog.push(message) },
      });
      expect(stepLog).to.have.length(1);
      expect(warnings).to.have.length(1);
    });

    it('verify compares entity points with the entities collection; --repair restores points gone from it', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const services = { db: t.db, providers };
      for (const [name, type] of [
        ['Ausbildungsvertrag', 'CONCEPT'],
        ['Kammer', 'ORGANIZATION'],
      ]) {
        await t.db.run('INSERT INTO entities (name, normalized_name, type) VALUES (?, ?, ?)', [
          name,
          name.toLowerCase(),
          type,
        ]);
      }
      const rows = await t.db.query<EntityRow>(
        'SELECT id, name, normalized_name, type, description FROM entities ORDER BY id',
      );
      expect(await storeEntityPoints(services, rows)).to.equal(2);
      expect((await verifyIndex(services)).counts.entitiesWithoutPoint).to.equal(0);

      // the entities collection deleted behind cpe's back: the entities still name their points
      server.collections.delete('entities');
      const report = await verifyIndex(services);
      expect(report.counts.entitiesWithoutPoint).to.equal(2);
      expect(report.ok).to.equal(false);
      expect(report.problems.join('\n'))
        .to.include('2 entities have no point in')
        .and.include('gone from the index');
      const repaired = await verifyIndex(services, { repair: true });
      expect(repaired.repaired?.entitiesStored).to.equal(2);
      expect(repaired.ok).to.equal(true);
      expect(server.points('entities')).to.have.length(2);

      // one point deleted from the collection (it exists)
      const [first] = server.points('entities');
      server.collections.get('entities')!.points.delete(String(first!.id));
      expect((await verifyIndex(services)).counts.entitiesWithoutPoint).to.equal(1);
      expect((await verifyIndex(services, { repair: true })).ok).to.equal(true);
      expect(server.points('entities')).to.have.length(2);

      // the entities collection is not one of chunks: repairing it as one would delete every entity point
      const refused = (await verifyIndex(services, { collection: 'entities', repair: true }).catch(
        (e: unknown) => e,
      )) as CpeError;
      expect(refused.code).to.equal('USAGE');
      expect(server.points('entities')).to.have.length(2);
    });

    it('sends the API key and never shows it in errors', async () => {
      await server.close();
      server = new QdrantTestServer({ apiKey: 'geheim-123' });
      url = (await server.start()).url;
      const good = createVectorIndex({ qdrantUrl: url, qdrantApiKey: 'geheim-123', db: t.db });
      await good.ensureCollection('documents', { size: 4, distance: 'Cosine', model: 'm' });
      expect(server.apiKeysSeen).to.include('geheim-123');
      const bad = createVectorIndex({ qdrantUrl: url, qdrantApiKey: 'falsch-456', db: t.db });
      const error = await bad.count('documents').catch((e) => e);
      expect(error).to.be.instanceOf(CpeError);
      expect((error as CpeError).retryable).to.equal(false);
      expect((error as Error).message).to.include('401');
      expect(JSON.stringify({ m: (error as Error).message, d: (error as CpeError).details })).to.not.include(
        'falsch-456',
      );
    });

    it('sends user and password in the URL as Basic authorization on every request, beside the API key', async () => {
      await server.close();
      server = new QdrantTestServer({ apiKey: 'geheim-123' });
      // a reverse proxy in front of Qdrant: no request passes without the Basic authorization it expects
      const expected = `Basic ${Buffer.from('qd:Qd@Pass:1234').toString('base64')}`;
      const authorizationsSeen: Array<string | undefined> = [];
      server.mount((req, res) => {
        authorizationsSeen.push(req.headers.authorization);
        if (req.headers.authorization === expected) return false;
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: { error: 'Unauthorized' }, time: 0 }));
        return true;
      });
      const bare = (await server.start()).url;
      const withUser = (password: string) => bare.replace('http://', `http://qd:${password}@`);
      // percent-encoded in the URL, decoded in the header
      const good = createVectorIndex({
        qdrantUrl: withUser('Qd%40Pass%3A1234'),
        qdrantApiKey: 'geheim-123',
        db: t.db,
      }) as QdrantVectorIndex;
      await good.ensureCollection('documents', { size: 4, distance: 'Cosine', model: 'm' });
      expect(await good.count('documents')).to.equal(0);
      expect(authorizationsSeen.length).to.be.greaterThan(1);
      expect(authorizationsSeen.every((a) => a === expected)).to.equal(true);
      expect(server.apiKeysSeen.every((k) => k === 'geheim-123')).to.equal(true);
      expect(good.location).to.equal(bare.replace(/\/$/, ''));

      const bad = createVectorIndex({ qdrantUrl: withUser('Falsch%21789'), db: t.db });
      const error = await bad.count('documents').catch((e) => e);
      expect(error).to.be.instanceOf(CpeError);
      expect((error as CpeError).retryable).to.equal(false);
      expect((error as Error).message).to.include('401');
      expect(JSON.stringify({ m: (error as Error).message, d: (error as CpeError).details })).to.not.match(
        /Falsch|qd:/,
      );
    });

    it('verify finds missing and orphan points and repair makes Qdrant agree with SQL', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const id = await insertDocument(t.db, { sourcePath: '/src/v.md', title: 'V' });
      await insertChunks(t.db, id, ['Eins zwei drei.', 'Vier fünf sechs.', 'Sieben acht neun.']);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id, sourcePath: '/src/v.md' },
        }),
      );
      server.collections.get('documents')!.points.delete(chunkPointId(id, 2));
      const stray = chunkPointId(4242, 0);
      const vector = Array.from((await createLocalEmbedder().embed(['x']))[0]!);
      server.collections.get('documents')!.points.set(stray, {
        id: stray,
        vector,
        payload: { document_id: 4242, chunk_index: 0 },
      });
      // a point of the original system, with an integer id: deleted as an integer (Qdrant refuses the text "42")
      server.collections
        .get('documents')!
        .points.set('42', { id: 42, vector, payload: { document_id: 4243 } });
      const services = { db: t.db, providers };
      const report = await verifyIndex(services);
      expect(report).to.include({ ok: false, backend: 'qdrant' });
      expect(report.counts).to.include({ expected: 3, points: 4, missing: 1, orphans: 2 });
      const repaired = await verifyIndex(services, { repair: true });
      expect(repaired.ok).to.equal(true);
      expect(
        server
          .points('documents')
          .map((p) => p.id)
          .sort(),
      ).to.deep.equal([0, 1, 2].map((i) => chunkPointId(id, i)).sort());
    });
  });
}
