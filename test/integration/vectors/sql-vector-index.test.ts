import { expect } from 'chai';
import { blobToVector, vectorToBlob } from '../../../src/embed/vector-blob.js';
import { CpeError } from '../../../src/errors.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import { SqlVectorIndex } from '../../../src/vectors/sql-vector-index.js';
import { backends, insertChunks, insertDocument, openTestDatabases, type TestDatabases } from './helpers.js';

const spec = { size: 4, distance: 'Cosine' as const, model: 'test-model' };
const v = (...values: number[]) => Float32Array.from(values);
const point = (documentId: number, chunkIndex: number, vector: Float32Array) => ({
  id: chunkPointId(documentId, chunkIndex),
  vector,
  payload: {
    document_id: documentId,
    chunk_index: chunkIndex,
    content: `doc ${documentId} chunk ${chunkIndex}`,
  },
});

for (const backend of backends()) {
  describe(`SqlVectorIndex on ${backend}`, () => {
    let t: TestDatabases;
    let index: SqlVectorIndex;

    beforeEach(async () => {
      t = await openTestDatabases(backend);
      index = new SqlVectorIndex(t.db, `${backend}:test`);
      await index.ensureCollection('documents', spec);
    });
    afterEach(async () => {
      await t.cleanup();
    });

    it('stamps the collection and refuses another model or size with a way forward', async () => {
      await index.ensureCollection('documents', spec); // same spec: fine
      const info = await index.describeCollection('documents');
      expect(info).to.include({ exists: true, model: 'test-model', dimensions: 4, points: 0 });
      let error: unknown;
      try {
        await index.ensureCollection('documents', { ...spec, model: 'other-model' });
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(CpeError);
      expect((error as CpeError).code).to.equal('COLLECTION_MISMATCH');
      expect((error as Error).message).to.include('was built with test-model (4 dimensions)');
      expect((error as Error).message).to.include("set config.collection to 'documents_other_model'");
      try {
        await index.ensureCollection('documents', { ...spec, size: 8 });
        expect.fail('a different size must be refused');
      } catch (e) {
        expect((e as CpeError).code).to.equal('COLLECTION_MISMATCH');
      }
    });

    it('stores float32 BLOBs, searches by cosine, and re-upserting keeps the same points', async () => {
      const points = [point(1, 0, v(1, 0, 0, 0)), point(1, 1, v(0, 1, 0, 0)), point(2, 0, v(1, 1, 0, 0))];
      await index.upsert('documents', points);
      await index.upsert('documents', points);
      expect(await index.count('documents')).to.equal(3);
      const [blob] = await t.db.query<{ n: number }>(
        `SELECT ${backend === 'mysql' ? 'LENGTH' : 'length'}(vector) AS n FROM vector_points LIMIT 1`,
      );
      expect(Number(blob.n)).to.equal(16);

      const hits = await index.search('documents', v(2, 0, 0, 0), { limit: 2 });
      expect(hits.map((h) => h.id)).to.deep.equal([chunkPointId(1, 0), chunkPointId(2, 0)]);
      expect(hits[0].score).to.be.closeTo(1, 1e-6);
      expect(hits[1].score).to.be.closeTo(Math.SQRT1_2, 1e-6);
      expect(hits[0].payload).to.deep.include({ document_id: 1, chunk_index: 0 });

      const filtered = await index.search('documents', v(1, 0, 0, 0), { limit: 5, documentIds: [2] });
      expect(filtered.map((h) => h.id)).to.deep.equal([chunkPointId(2, 0)]);
    });

    it('keeps the in-memory matrix current on its own writes and reloads after writes by another process', async () => {
      await index.upsert('documents', [point(1, 0, v(1, 0, 0, 0))]);
      expect((await index.search('documents', v(0, 0, 1, 0), { limit: 1 }))[0].id).to.equal(
        chunkPointId(1, 0),
      );
      // own write after the load
      await index.upsert('documents', [point(3, 0, v(0, 0, 1, 0))]);
      expect((await index.search('documents', v(0, 0, 1, 0), { limit: 1 }))[0].id).to.equal(
        chunkPointId(3, 0),
      );
      // a second index object on the same database stands for another process
      const other = new SqlVectorIndex(t.db);
      await other.upsert('documents', [point(4, 0, v(0, 0, 0, 1))]);
      await other.deletePoints('documents', [chunkPointId(3, 0)]);
      const hits = await index.search('documents', v(0, 0, 1, 1), { limit: 5 });
      expect(hits.map((h) => h.id)).to.have.members([chunkPointId(4, 0), chunkPointId(1, 0)]);
      expect(hits[0].id).to.equal(chunkPointId(4, 0));
    });

    it('deletes a document except the points to keep, lists, optimises and drops', async () => {
      await index.upsert('documents', [
        point(1, 0, v(1, 0, 0, 0)),
        point(1, 1, v(0, 1, 0, 0)),
        point(1, 2, v(0, 0, 1, 0)),
        point(2, 0, v(0, 0, 0, 1)),
      ]);
      await index.search('documents', v(1, 0, 0, 0), { limit: 1 }); // load into memory first
      await index.deleteByDocument('documents', 1, { keepIds: [chunkPointId(1, 0)] });
      const listed = await index.listPoints('documents');
      expect(listed.map((p) => p.id).sort()).to.deep.equal([chunkPointId(1, 0), chunkPointId(2, 0)].sort());
      const hits = await index.search('documents', v(0, 1, 1, 0), { limit: 10 });
      expect(hits.map((h) => h.id)).to.have.members([chunkPointId(1, 0), chunkPointId(2, 0)]);
      expect((await index.optimize('documents'))[0]).to.match(/ANALYZE/);
      await index.dropCollection('documents');
      expect(await index.describeCollection('documents')).to.include({ exists: false });
      expect(await index.search('documents', v(1, 0, 0, 0), { limit: 1 })).to.deep.equal([]);
    });

    it('returns every point tied with the last one at the limit, and no point below it', async () => {
      await index.upsert('documents', [
        point(5, 0, v(1, 1, 0, 0)),
        point(4, 0, v(1, 1, 0, 0)),
        point(1, 0, v(1, 0, 0, 0)),
        point(3, 0, v(1, 1, 0, 0)),
        point(2, 0, v(1, 2, 0, 0)),
        point(6, 0, v(0, 0, 1, 0)),
      ]);
      const tied = [chunkPointId(3, 0), chunkPointId(4, 0), chunkPointId(5, 0)];
      const ids = async (limit: number) =>
        (await index.search('documents', v(1, 0, 0, 0), { limit })).map((h) => h.id);
      expect(await ids(1)).to.deep.equal([chunkPointId(1, 0)]);
      // which of the three equal scores would make a cut at 2 or 3 is left to the caller: all three come back
      for (const limit of [2, 3, 4]) {
        const hits = await ids(limit);
        expect(hits, String(limit)).to.have.length(4);
        expect(hits[0]).to.equal(chunkPointId(1, 0));
        expect(hits.slice(1)).to.have.members(tied);
      }
      expect((await ids(5)).slice(-1)).to.deep.equal([chunkPointId(2, 0)]);
    });

    it('loads a collection larger than one page completely', async () => {
      const points = Array.from({ length: 23 }, (_, i) => point(10 + i, 0, v(1, i, i % 3, 1)));
      await index.upsert('documents', points);
      const fresh = new SqlVectorIndex(t.db, undefined, { loadPageSize: 5 });
      const hits = await fresh.search('documents', v(1, 0, 0, 1), { limit: 100 });
      expect(hits.map((h) => h.id).sort()).to.deep.equal(points.map((p) => p.id).sort());
      expect(hits[0].id).to.equal(chunkPointId(10, 0));
    });

    it('stores a cached unit vector as a reference to embedding_cache, once, and searches it after a reload', async () => {
      const unit = v(0.6, 0.8, 0, 0);
      await t.db.run(
        'INSERT INTO embedding_cache (model, text_hash, dimensions, vector) VALUES (?, ?, ?, ?)',
        ['test-model', 'a'.repeat(64), 4, vectorToBlob(unit)],
      );
      const notUnit = v(3, 4, 0, 0);
      await index.upsert('documents', [
        { ...point(1, 0, unit), cached: { model: 'test-model', textHash: 'a'.repeat(64) } },
        // not unit length: the index normalises it, so it is not the cache's bytes and is stored inline
        { ...point(1, 1, notUnit), cached: { model: 'test-model', textHash: 'b'.repeat(64) } },
        point(2, 0, v(0, 0, 1, 0)),
      ]);
      const rows = await t.db.query<Record<string, any>>(
        'SELECT point_id, vector, vector_model, text_hash FROM vector_points',
      );
      const byId = new Map(rows.map((r) => [r.point_id, r]));
      expect(byId.get(chunkPointId(1, 0))).to.deep.include({
        vector: null,
        vector_model: 'test-model',
        text_hash: 'a'.repeat(64),
      });
      expect(byId.get(chunkPointId(1, 1))).to.deep.include({ vector_model: null, text_hash: null });
      expect(blobToVector(byId.get(chunkPointId(1, 1))!.vector)).to.deep.equal(v(0.6, 0.8, 0, 0));
      expect(byId.get(chunkPointId(2, 0))!.vector).to.not.equal(null);

      // another process loads the referenced vector from the cache
      const fresh = new SqlVectorIndex(t.db);
      const hits = await fresh.search('documents', v(0.6, 0.8, 0, 0), { limit: 3 });
      expect(hits.slice(0, 2).map((h) => h.id)).to.have.members([chunkPointId(1, 0), chunkPointId(1, 1)]);
      expect(hits[0].score).to.be.closeTo(1, 1e-6);
      expect(await fresh.wrongSizePoints('documents', 4)).to.deep.equal([]);

      // a point whose cache row is gone has no vector: not searched, reported by verify's check
      await t.db.run('DELETE FROM embedding_cache');
      const afterDelete = new SqlVectorIndex(t.db);
      const left = await afterDelete.search('documents', v(0.6, 0.8, 0, 0), { limit: 3 });
      expect(left.map((h) => h.id)).to.have.members([chunkPointId(1, 1), chunkPointId(2, 0)]);
      expect(await afterDelete.wrongSizePoints('documents', 4)).to.deep.equal([chunkPointId(1, 0)]);
    });

    it('keeps a chunk point’s text in chunks only and puts it back into the payload of a hit', async () => {
      const documentId = await insertDocument(t.db, { sourcePath: '/src/a.md' });
      const text = 'Der Urlaubsanspruch beträgt 30 Arbeitstage im Kalenderjahr.';
      const [chunkId] = await insertChunks(t.db, documentId, [text]);
      await index.upsert('documents', [
        {
          id: chunkPointId(documentId, 0),
          vector: v(1, 0, 0, 0),
          payload: { document_id: documentId, chunk_id: chunkId, chunk_index: 0, content: text.slice(0, 20) },
          contentFromChunk: true,
        },
      ]);
      const [row] = await t.db.query<{ payload: string; content_chars: number }>(
        'SELECT payload, content_chars FROM vector_points',
      );
      expect(JSON.parse(row!.payload)).to.not.have.property('content');
      expect(Number(row!.content_chars)).to.equal(20);
      const [hit] = await new SqlVectorIndex(t.db).search('documents', v(1, 0, 0, 0), { limit: 1 });
      expect(hit!.payload).to.deep.equal({
        document_id: documentId,
        chunk_id: chunkId,
        chunk_index: 0,
        content: 'Der Urlaubsanspruch ',
      });
    });

    it('never scores above 1 or below -1, though float32 rounding puts a unit vector a hair over 1 with itself', async () => {
      const wide = { ...spec, size: 1024 };
      await index.ensureCollection('wide', wide);
      // a vector whose float32 unit form has a dot product of 1.0000001 with itself (found by trying)
      const vector = Float32Array.from({ length: 1024 }, (_, i) => Math.sin(2 * i + 2) + (i % 7) / 10);
      const opposite = vector.map((x) => -x);
      await index.upsert('wide', [point(1, 0, vector), point(1, 1, opposite)]);
      for (const query of [vector, opposite]) {
        const hits = await index.search('wide', query, { limit: 2 });
        expect(hits.map((h) => h.score)).to.deep.equal([1, -1]);
      }
    });

    it('refuses vectors of the wrong size', async () => {
      try {
        await index.upsert('documents', [point(1, 0, v(1, 0, 0))]);
        expect.fail('expected a refusal');
      } catch (e) {
        expect((e as CpeError).code).to.equal('COLLECTION_MISMATCH');
        expect((e as Error).message).to.include('3-dimensional vector');
      }
      expect(await index.count('documents')).to.equal(0);
    });

    it('rolls a write back when its collection is gone or was rebuilt with another size meanwhile', async () => {
      await index.upsert('documents', [point(1, 0, v(1, 0, 0, 0))]);
      // another process drops the collection and builds it again for 3-dimensional vectors
      const other = new SqlVectorIndex(t.db, `${backend}:other`);
      await other.dropCollection('documents');
      await other.ensureCollection('documents', { ...spec, size: 3 });
      const error = await index.upsert('documents', [point(1, 1, v(0, 1, 0, 0))]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as CpeError).code).to.equal('COLLECTION_MISMATCH');
      expect((error as Error).message).to.include(
        "4-dimensional vectors for collection 'documents' of 3 dimensions",
      );
      expect(await other.count('documents')).to.equal(0);
      await other.dropCollection('documents');
      const missing = await index.upsert('documents', [point(1, 1, v(0, 1, 0, 0))]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((missing as Error).message).to.include("collection 'documents' does not exist");
      expect(await index.count('documents')).to.equal(0);
      // the index checked the collection once; the failed write makes it look again, and create it
      await index.ensureCollection('documents', spec);
      await index.upsert('documents', [point(1, 1, v(0, 1, 0, 0))]);
      expect(await index.count('documents')).to.equal(1);
      expect(await index.describeCollection('documents')).to.include({ model: 'test-model', dimensions: 4 });
    });
  });
}
