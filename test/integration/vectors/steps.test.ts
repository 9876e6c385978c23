import { expect } from 'chai';
import { replaceChunks } from '../../../src/content/chunk-store.js';
import type { SqlExecutor } from '../../../src/db/sql.js';
import { textHash } from '../../../src/embed/cache.js';
import { createLocalEmbedder } from '../../../src/embed/local-hash.js';
import { chunkEmbedText } from '../../../src/embed/prepare.js';
import { type Embedder, EmbedInputError } from '../../../src/embed/types.js';
import { retractDocument } from '../../../src/engine/retract.js';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { buildContext } from '../../../src/retrieval/context.js';
import { embedSettings } from '../../../src/retrieval/embed-settings.js';
import { searchChunks } from '../../../src/retrieval/search.js';
import { verifyIndex } from '../../../src/retrieval/verify.js';
import type { ChunkDraft } from '../../../src/text/chunk.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import { SqlVectorIndex } from '../../../src/vectors/sql-vector-index.js';
import type { VectorIndex } from '../../../src/vectors/types.js';
import collectionSetup from '../../../steps/collection_setup.js';
import embed from '../../../steps/embed.js';
import indexOptimize from '../../../steps/index_optimize.js';
import vectorStore from '../../../steps/vector_store.js';
import { insertPipeline } from '../../helpers/pipelines.js';
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

/** The local embedder, counting the texts it is asked to embed. */
function countingEmbedder(inner: Embedder = createLocalEmbedder()): Embedder & { texts: string[] } {
  const texts: string[] = [];
  return {
    model: inner.model,
    dimensions: inner.dimensions,
    kind: inner.kind,
    location: inner.location,
    texts,
    embed: async (input, signal) => {
      texts.push(...input);
      return inner.embed(input, signal);
    },
  };
}

/**
 * An embedder that only embeds, as Ollama's does: the step prepares and hashes the texts itself and looks them
 * up before it asks (the local embedder does all of that on its worker threads, see prepareAndEmbed).
 */
function remoteLike(embedder: Embedder): Embedder {
  const { prepareAndEmbed: _itself, ...rest } = embedder;
  return rest;
}

/** Records the order of writes, to check that old points go only after new ones are stored. */
function recordingIndex(inner: VectorIndex, log: string[]): VectorIndex {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (prop === 'upsert')
          log.push(
            `upsert ${(args[1] as Array<{ payload: { document_id: number } }>).map((p) => p.payload.document_id).join(',')}`,
          );
        if (prop === 'deleteByDocument')
          log.push(`delete ${args[1]}${(args[2] as any)?.keepIds ? ' (stale only)' : ''}`);
        return value.apply(target, args);
      };
    },
  });
}

/** The database with `around` wrapped about each of its transactions (to record when they are written, or hold them up). */
function aroundTransactions(
  db: SqlExecutor,
  around: (write: () => Promise<unknown>) => Promise<unknown>,
): SqlExecutor {
  return new Proxy(db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'transaction') return typeof value === 'function' ? value.bind(target) : value;
      return (fn: (tx: SqlExecutor) => Promise<unknown>) => around(() => value.call(target, fn));
    },
  });
}

const GERMAN = [
  {
    content:
      'Der Arbeitgeber hat die Gefährdungsbeurteilung für jeden Arbeitsplatz durchzuführen und zu dokumentieren. ' +
      'Arbeitsschutzmaßnahmen sind regelmäßig auf ihre Wirksamkeit zu überprüfen.',
    headingPath: ['Arbeitsschutz', 'Gefährdungsbeurteilung'],
    page: 3,
  },
  {
    content:
      'Die Urlaubsplanung erfolgt im ersten Quartal. Der Urlaubsanspruch beträgt 30 Arbeitstage im Kalenderjahr.',
    headingPath: ['Personal', 'Urlaub'],
    page: 7,
  },
  {
    content:
      'Inhaltsverzeichnis ......................................... 12 Die Kantine öffnet um 11:30 Uhr.',
    headingPath: ['Allgemeines'],
    page: 1,
  },
];

for (const backend of backends()) {
  describe(`vector steps and retrieval on ${backend} (embedded index, local embedder)`, () => {
    let t: TestDatabases;
    let index: SqlVectorIndex;

    beforeEach(async () => {
      t = await openTestDatabases(backend);
      index = new SqlVectorIndex(t.db);
    });
    afterEach(async () => {
      await t.cleanup();
    });

    it('embed without a vector_store step embeds, stores points with payload, and a rerun embeds nothing', async () => {
      const embedder = countingEmbedder();
      const providers = makeProviders(embedder, index);
      const docId = await insertDocument(t.db, { sourcePath: '/src/handbuch.pdf', title: 'Handbuch' });
      const chunkIds = await insertChunks(t.db, docId, GERMAN);
      const ctx = makeCtx({
        db: t.db,
        providers,
        config: embedConfig,
        type: 'embed',
        document: { id: docId, sourcePath: '/src/handbuch.pdf' },
      });
      await embed.run(ctx);

      const chunks = await t.db.query<any>(
        'SELECT id, status, embedding_model, qdrant_id, chunk_index FROM chunks ORDER BY chunk_index',
      );
      expect(chunks.map((c) => c.status)).to.deep.equal(['embedded', 'embedded', 'embedded']);
      expect(chunks.map((c) => c.embedding_model)).to.deep.equal([
        'local-hash-v2',
        'local-hash-v2',
        'local-hash-v2',
      ]);
      expect(chunks.map((c) => c.qdrant_id)).to.deep.equal([0, 1, 2].map((i) => chunkPointId(docId, i)));
      expect(embedder.texts).to.have.length(3);
      // title and heading path in front, dot leaders collapsed before embedding
      expect(embedder.texts[2]).to.equal(
        'Handbuch › Allgemeines Inhaltsverzeichnis ... 12 Die Kantine öffnet um 11:30 Uhr.',
      );
      expect(ctx.reports[0]).to.include({ itemsIn: 3, itemsOut: 3, embedded: 3, pointsStored: 3 });

      const points = await t.db.query<any>(
        'SELECT point_id, document_id, chunk_id, payload FROM vector_points ORDER BY point_id',
      );
      expect(points).to.have.length(3);
      const payload = JSON.parse(points.find((p) => p.point_id === chunkPointId(docId, 0)).payload);
      expect(payload).to.deep.include({
        document_id: docId,
        document_title: 'Handbuch',
        chunk_index: 0,
        chunk_id: chunkIds[0],
        heading_path: ['Arbeitsschutz', 'Gefährdungsbeurteilung'],
        source_path: '/src/handbuch.pdf',
        page: 3,
      });

      // rerun: nothing to embed, same points
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id: docId, sourcePath: '/src/handbuch.pdf' },
        }),
      );
      expect(embedder.texts).to.have.length(3);
      expect(await index.count('documents')).to.equal(3);
    });

    it('chunks name their point from the start; a chunk the embedder rejects is failed and loses its point id', async () => {
      const docId = await insertDocument(t.db, { sourcePath: '/src/d.md', title: 'D' });
      const drafts = ['Erster Absatz.', 'Kaputter Absatz.', 'Dritter Absatz.'].map((content, index) => ({
        index,
        content,
        start: 0,
        end: content.length,
        tokenCount: 3,
        headingPath: [],
        pageStart: 1,
        pageEnd: 1,
        sectionIndex: 0,
        metadata: {} as ChunkDraft['metadata'],
      }));
      await replaceChunks(t.db, docId, drafts, { pipelineVersion: 'test', stepConfigHash: 'test' });
      const pointIds = [0, 1, 2].map((i) => chunkPointId(docId, i));
      const before = await t.db.query<any>('SELECT qdrant_id FROM chunks ORDER BY chunk_index');
      expect(before.map((c) => c.qdrant_id)).to.deep.equal(pointIds);

      const local = remoteLike(createLocalEmbedder());
      const rejecting: Embedder = {
        ...local,
        model: local.model,
        dimensions: local.dimensions,
        embed: async (texts) => {
          const vectors: Array<Float32Array | undefined> = await local.embed(texts);
          const bad = texts.findIndex((x) => x.includes('Kaputter'));
          if (bad < 0) return vectors as Float32Array[];
          vectors[bad] = undefined;
          throw new EmbedInputError(local.model, vectors, [{ index: bad, message: 'input rejected' }]);
        },
      };
      const ctx = makeCtx({
        db: t.db,
        providers: makeProviders(rejecting, index),
        config: embedConfig,
        type: 'embed',
        document: { id: docId, sourcePath: '/src/d.md' },
      });
      await embed.run(ctx);
      const after = await t.db.query<any>(
        'SELECT status, embedding_model, qdrant_id FROM chunks ORDER BY chunk_index',
      );
      expect(after).to.deep.equal([
        { status: 'embedded', embedding_model: 'local-hash-v2', qdrant_id: pointIds[0] },
        { status: 'failed', embedding_model: null, qdrant_id: null },
        { status: 'embedded', embedding_model: 'local-hash-v2', qdrant_id: pointIds[2] },
      ]);
      expect((await index.listPoints('documents')).map((p) => p.id).sort()).to.deep.equal(
        [pointIds[0], pointIds[2]].sort(),
      );
      expect(ctx.reports[0]).to.include({ embedded: 2, failed: 1, pointsStored: 2 });
      // each vector once: in the cache, the points refer to it
      const [{ inline }] = await t.db.query<any>(
        'SELECT COUNT(*) AS inline FROM vector_points WHERE vector IS NOT NULL',
      );
      expect(Number(inline)).to.equal(0);
    });

    it('points refer to the cached vectors: verify finds points whose cache row is gone, and repair rebuilds them from SQL', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const services = { db: t.db, providers };
      const docId = await insertDocument(t.db, { sourcePath: '/src/e.md', title: 'E' });
      await insertChunks(t.db, docId, ['Brandschutzordnung Teil A.', 'Fluchtwege freihalten.']);
      const document = { id: docId, sourcePath: '/src/e.md' };
      await embed.run(makeCtx({ db: t.db, providers, config: embedConfig, type: 'embed', document }));
      expect((await verifyIndex(services)).ok).to.equal(true);

      await t.db.run('DELETE FROM embedding_cache');
      const report = await verifyIndex(services);
      expect(report.ok).to.equal(false);
      expect(report.counts).to.include({ wrongSize: 2 });
      const repaired = await verifyIndex(services, { repair: true });
      expect(repaired.ok).to.equal(true);
      const [{ n }] = await t.db.query<any>(
        'SELECT COUNT(*) AS n FROM vector_points vp JOIN embedding_cache ec ON ec.model = vp.vector_model AND ec.text_hash = vp.text_hash',
      );
      expect(Number(n)).to.equal(2);
      const hits = await searchChunks(services, 'Fluchtwege', { limit: 1 });
      expect(hits[0]?.chunk_index).to.equal(1);
    });

    it('an unchanged chunk text in a new version comes from the cache, not the embedder', async () => {
      const embedder = countingEmbedder();
      const providers = makeProviders(embedder, index);
      const v1 = await insertDocument(t.db, { sourcePath: '/src/a.md', title: 'A' });
      await insertChunks(t.db, v1, ['Erster Absatz über Brandschutz.', 'Zweiter Absatz über Fluchtwege.']);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id: v1, sourcePath: '/src/a.md' },
        }),
      );
      const v2 = await newVersion(t.db, v1, '/src/a.md', 'A');
      await insertChunks(t.db, v2, ['Erster Absatz über Brandschutz.', 'Neuer Absatz über Feuerlöscher.']);
      const ctx = makeCtx({
        db: t.db,
        providers,
        config: embedConfig,
        type: 'embed',
        document: { id: v2, sourcePath: '/src/a.md', action: 'update' },
      });
      await embed.run(ctx);
      // the embedded text starts with the document title (no heading path here)
      expect(embedder.texts).to.deep.equal([
        'A Erster Absatz über Brandschutz.',
        'A Zweiter Absatz über Fluchtwege.',
        'A Neuer Absatz über Feuerlöscher.',
      ]);
      expect(ctx.reports[0]).to.include({ cached: 1, embedded: 1 });
    });

    it('the payload of a point holds the first 1000 UTF-16 units of its chunk, astral characters included', async () => {
      const upserted: Array<{ payload: { content?: string } }> = [];
      const watching = new Proxy(index, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop !== 'upsert' || typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            upserted.push(...(args[1] as typeof upserted));
            return value.apply(target, args);
          };
        },
      });
      const docId = await insertDocument(t.db, { sourcePath: '/src/e.md', title: 'E' });
      const content = `${'😀'.repeat(600)}${'x'.repeat(500)}`;
      await insertChunks(t.db, docId, [content, 'kurz']);
      await embed.run(
        makeCtx({
          db: t.db,
          providers: makeProviders(createLocalEmbedder(), watching),
          config: embedConfig,
          type: 'embed',
          document: { id: docId, sourcePath: '/src/e.md' },
        }),
      );
      expect(upserted.map((p) => p.payload.content)).to.deep.equal([content.slice(0, 1000), 'kurz']);
    });

    it('the local embedder prepares, hashes and embeds on its threads: a repeated text is cached, a rerun is up to date', async () => {
      const providers = makeProviders(createLocalEmbedder({ threads: 2 }), index);
      const runEmbed = async (docId: number, sourcePath: string) => {
        const ctx = makeCtx({
          db: t.db,
          providers,
          config: { ...embedConfig, batch_size: 2 },
          type: 'embed',
          document: { id: docId, sourcePath },
        });
        await embed.run(ctx);
        return ctx.reports[0];
      };
      const a = await insertDocument(t.db, { sourcePath: '/src/l.md', title: 'L' });
      await insertChunks(t.db, a, ['Eins.', 'Zwei.', 'Drei.', 'Eins.', 'Vier.']);
      // rounds [Eins, Zwei] [Drei, Eins] [Vier]: the second "Eins" takes the first round's vector
      expect(await runEmbed(a, '/src/l.md')).to.include({
        embedded: 4,
        cached: 1,
        upToDate: 0,
        pointsStored: 5,
      });
      expect(await runEmbed(a, '/src/l.md')).to.include({ embedded: 0, cached: 0, upToDate: 5 });
      // the same title and text in another document: from the cache, not written again
      const b = await insertDocument(t.db, { sourcePath: '/src/m.md', title: 'L' });
      await insertChunks(t.db, b, ['Zwei.']);
      expect(await runEmbed(b, '/src/m.md')).to.include({ embedded: 0, cached: 1, upToDate: 0 });
      const rows = await t.db.query<{ text_hash: string; n: number }>(
        `SELECT cv.text_hash, COUNT(*) AS n FROM chunk_vectors cv JOIN chunks c ON c.id = cv.chunk_id
         WHERE c.document_id IN (?, ?) GROUP BY cv.text_hash ORDER BY n DESC, cv.text_hash`,
        [a, b],
      );
      expect(rows.map((r) => Number(r.n))).to.deep.equal([2, 2, 1, 1]);
      // every hash is the step's own: chunkEmbedText of the chunk, hashed
      const expected = ['Eins.', 'Zwei.', 'Drei.', 'Vier.'].map((text) =>
        textHash(chunkEmbedText(text, { title: 'L' }, Number.POSITIVE_INFINITY)),
      );
      expect(rows.map((r) => r.text_hash).sort()).to.deep.equal([...expected].sort());
      const [{ n: cachedRows }] = await t.db.query<{ n: number }>(
        'SELECT COUNT(*) AS n FROM embedding_cache WHERE text_hash IN (?, ?, ?, ?)',
        expected,
      );
      expect(Number(cachedRows)).to.equal(4);
    });

    it('embeds in rounds of batch_size: the next round is embedded while one is written, a repeated text once', async () => {
      const events: string[] = [];
      const inner = countingEmbedder();
      let secondRoundCalled = () => {};
      const secondRound = new Promise<void>((resolve) => {
        secondRoundCalled = resolve;
      });
      const embedder: Embedder = {
        ...inner,
        embed: async (input, signal) => {
          events.push(`embed ${input.join(' | ')}`);
          if (events.filter((e) => e.startsWith('embed')).length === 2) secondRoundCalled();
          return inner.embed(input, signal);
        },
      };
      // every write transaction of the step, in order. A write waits until the second round has gone to the
      // embedder: whether the step's lookup for that round or the first round's write comes back first is up to
      // the database (on MariaDB both are round trips), and the order asserted below is the step's, not theirs.
      // A step that embedded only after writing would still write, 5 s later, and fail the assertion.
      const db = aroundTransactions(t.db, async (write) => {
        await Promise.race([secondRound, new Promise((resolve) => setTimeout(resolve, 5000))]);
        const out = await write();
        events.push('written');
        return out;
      });
      const docId = await insertDocument(t.db, { sourcePath: '/src/r.md', title: 'R' });
      await insertChunks(t.db, docId, ['Eins.', 'Zwei.', 'Drei.', 'Eins.', 'Vier.']);
      const ctx = makeCtx({
        db,
        providers: makeProviders(embedder, index),
        config: { ...embedConfig, batch_size: 2 },
        type: 'embed',
        document: { id: docId, sourcePath: '/src/r.md' },
      });
      await embed.run(ctx);
      // rounds [Eins, Zwei] [Drei, Eins] [Vier]: the second is embedded before the first is written; its
      // "Eins" takes the first round's vector (as it would from the cache), so the embedder sees it once
      expect(events.slice(0, 3)).to.deep.equal(['embed R Eins. | R Zwei.', 'embed R Drei.', 'written']);
      expect(inner.texts).to.deep.equal(['R Eins.', 'R Zwei.', 'R Drei.', 'R Vier.']);
      expect(ctx.reports[0]).to.include({ embedded: 4, cached: 1, failed: 0, pointsStored: 5 });
      const rows = await t.db.query<{ status: string; text_hash: string }>(
        `SELECT c.status, cv.text_hash FROM chunks c JOIN chunk_vectors cv ON cv.chunk_id = c.id
         WHERE c.document_id = ? ORDER BY c.chunk_index`,
        [docId],
      );
      expect(rows.map((r) => r.status)).to.deep.equal(Array(5).fill('embedded'));
      expect(rows[3]!.text_hash).to.equal(rows[0]!.text_hash);
    });

    it('a round that fails while the one before is written fails the step (no unhandled rejection); written rounds stay', async () => {
      const inner = remoteLike(createLocalEmbedder());
      let calls = 0;
      const embedder: Embedder = {
        ...inner,
        embed: async (input, signal) => {
          if (++calls === 2) throw new Error('Ollama at http://127.0.0.1:1 is unreachable');
          return inner.embed(input, signal);
        },
      };
      // the first round's write takes a while, so the second round fails before it is awaited
      const db = aroundTransactions(t.db, async (write) => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return write();
      });
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      const mochaListeners = process.listeners('unhandledRejection');
      process.removeAllListeners('unhandledRejection');
      process.on('unhandledRejection', onUnhandled);
      try {
        const docId = await insertDocument(t.db, { sourcePath: '/src/f.md', title: 'F' });
        await insertChunks(t.db, docId, ['Eins.', 'Zwei.', 'Drei.']);
        const ctx = makeCtx({
          db,
          providers: makeProviders(embedder, index),
          config: { ...embedConfig, batch_size: 2 },
          type: 'embed',
          document: { id: docId, sourcePath: '/src/f.md' },
        });
        const error = await embed.run(ctx).then(
          () => undefined,
          (e: Error) => e,
        );
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(error?.message).to.contain('unreachable');
        expect(unhandled).to.deep.equal([]);
        const statuses = await t.db.query<{ status: string }>(
          'SELECT status FROM chunks WHERE document_id = ? ORDER BY chunk_index',
          [docId],
        );
        expect(statuses.map((r) => r.status)).to.deep.equal(['embedded', 'embedded', 'pending']);
      } finally {
        process.removeListener('unhandledRejection', onUnhandled);
        for (const listener of mochaListeners) process.on('unhandledRejection', listener);
      }
    });

    it('a new version: new points are stored before the old version loses its points; delete removes all', async () => {
      const ops: string[] = [];
      const providers = makeProviders(createLocalEmbedder(), recordingIndex(index, ops));
      const v1 = await insertDocument(t.db, { sourcePath: '/src/b.docx', title: 'B' });
      await insertChunks(t.db, v1, ['Alt eins.', 'Alt zwei.', 'Alt drei.']);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id: v1, sourcePath: '/src/b.docx' },
        }),
      );
      await t.db.run(`UPDATE documents SET status = 'done' WHERE id = ?`, [v1]);
      const v2 = await newVersion(t.db, v1, '/src/b.docx', 'B');
      await insertChunks(t.db, v2, ['Neu eins.', 'Neu zwei.']);
      ops.length = 0;
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id: v2, sourcePath: '/src/b.docx', action: 'update' },
        }),
      );
      expect(ops).to.deep.equal([`upsert ${v2},${v2}`, `delete ${v2} (stale only)`, `delete ${v1}`]);
      const points = await index.listPoints('documents');
      expect(points.map((p) => p.documentId)).to.deep.equal([v2, v2]);
      const oldChunks = await t.db.query<any>('SELECT qdrant_id FROM chunks WHERE document_id = ?', [v1]);
      expect(oldChunks.every((c) => c.qdrant_id === null)).to.equal(true);

      // the file is gone from the source folder
      await t.db.run(`UPDATE documents SET status = 'deleted' WHERE id = ?`, [v2]);
      const ctx = makeCtx({
        db: t.db,
        providers,
        config: embedConfig,
        type: 'embed',
        document: { id: v2, sourcePath: '/src/b.docx', action: 'delete' },
      });
      await embed.run(ctx);
      expect(await index.count('documents')).to.equal(0);
      expect(ctx.reports[0]).to.include({ versionsRemoved: 2 });
    });

    it('a new version in flight leaves the latest version its points: search finds it until the new one is done', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const v1 = await insertDocument(t.db, { sourcePath: '/src/k.md', title: 'Konflikte', status: 'done' });
      await insertChunks(t.db, v1, ['Konflikte früh ansprechen und sachlich bleiben.']);
      const run = (id: number, action: 'new' | 'update' = 'new') =>
        embed.run(
          makeCtx({
            db: t.db,
            providers,
            config: embedConfig,
            type: 'embed',
            document: { id, sourcePath: '/src/k.md', action },
          }),
        );
      await run(v1);
      // version 2 is being processed: not latest until it is done (its later steps may still fail)
      const v2 = await insertDocument(t.db, {
        sourcePath: '/src/k.md',
        title: 'Konflikte',
        version: 2,
        isLatest: false,
        previousId: v1,
      });
      await insertChunks(t.db, v2, ['Konflikte früh ansprechen, sachlich bleiben und Lösungen vereinbaren.']);
      await run(v2, 'update');
      expect((await index.listPoints('documents')).map((p) => p.documentId).sort()).to.deep.equal(
        [v1, v2].sort(),
      );
      const hits = await searchChunks({ db: t.db, providers }, 'Konflikte ansprechen');
      expect(hits.map((h) => h.document_id)).to.deep.equal([v1]);
      // verify leaves the points of the version in flight alone
      const report = await verifyIndex({ db: t.db, providers }, { repair: true });
      expect(report.ok).to.equal(true);
      expect(report.counts).to.include({ stale: 0, inFlight: 1 });
      expect((await index.listPoints('documents')).map((p) => p.documentId).sort()).to.deep.equal(
        [v1, v2].sort(),
      );
    });

    it("verify finds points that hold a replaced chunk's vector, search does not show them, and repair replaces them", async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const v1 = await insertDocument(t.db, { sourcePath: '/src/r.md', title: 'R', status: 'done' });
      await insertChunks(t.db, v1, [
        'Stichwort Ablage: Ordner beschriften.',
        'Stichwort Archiv: Fristen beachten.',
      ]);
      const ctx = () =>
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id: v1, sourcePath: '/src/r.md' },
        });
      await embed.run(ctx());
      // re-chunked, and the embedding of the new chunks failed: the old points still sit in the new chunks' places
      await t.db.run('DELETE FROM chunks WHERE document_id = ?', [v1]);
      await insertChunks(t.db, v1, ['Neuer Text über Besprechungen.', 'Neuer Text über Pausen.']);
      const hits = await searchChunks({ db: t.db, providers }, 'Stichwort Ablage Ordner');
      expect(hits).to.deep.equal([]);
      const report = await verifyIndex({ db: t.db, providers });
      expect(report.ok).to.equal(false);
      expect(report.counts.outdated).to.equal(2);
      expect(report.problems.join('\n')).to.contain('2 points hold the vector of a chunk replaced since');
      const repaired = await verifyIndex({ db: t.db, providers }, { repair: true });
      expect(repaired.ok).to.equal(true);
      const found = await searchChunks({ db: t.db, providers }, 'Besprechungen');
      expect(found[0]!.content).to.equal('Neuer Text über Besprechungen.');
    });

    it('refuses a query of no words, retracts points from a collection of its own, and reads where a pipeline writes', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const id = await insertDocument(t.db, { sourcePath: '/src/h.md', title: 'Handbuch', status: 'done' });
      await insertChunks(t.db, id, ['Die Kantine öffnet um 11:30 Uhr.', 'Die Kantine schließt um 14 Uhr.']);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: { ...embedConfig, collection: 'handbuch' },
          type: 'embed',
          document: { id, sourcePath: '/src/h.md' },
        }),
      );
      const error = await searchChunks({ db: t.db, providers }, '???', { collection: 'handbuch' }).catch(
        (e: unknown) => e as CpeError,
      );
      expect((error as CpeError).code).to.equal(ErrorCodes.USAGE);
      expect((error as CpeError).message).to.equal("the search query '???' has no words to search for");

      await insertPipeline(t.db, 'Eigen', [
        { name: 'embed', type: 'embed', config: { collection: 'handbuch', max_embed_chars: 1500 } },
      ]);
      expect(await embedSettings(t.db, 'Eigen')).to.deep.equal({
        collection: 'handbuch',
        maxEmbedChars: 1500,
      });
      expect(await embedSettings(t.db)).to.deep.equal({ collection: 'documents', maxEmbedChars: 800 });
      const hits = await searchChunks({ db: t.db, providers }, 'Kantine', await embedSettings(t.db, 'Eigen'));
      expect(hits).to.have.length(2);

      // a draft marked default is not the pipeline `cpe run` takes: search does not look where it would write
      await insertPipeline(
        t.db,
        'Entwurf',
        [{ name: 'embed', type: 'embed', config: { collection: 'entwurf' } }],
        true,
      );
      await t.db.run("UPDATE pipeline_configs SET status = 'draft' WHERE name = 'Entwurf'");
      expect((await embedSettings(t.db)).collection).to.equal('documents');

      // the embed step's own model is the one a query is embedded with
      await insertPipeline(t.db, 'Modell', [
        { name: 'embed', type: 'embed', config: { collection: 'handbuch', model: 'bge-m3' } },
      ]);
      const settings = await embedSettings(t.db, 'Modell');
      expect(settings).to.deep.include({ collection: 'handbuch', embedModel: 'bge-m3' });
      const asked: unknown[] = [];
      const recording = {
        ...providers,
        embedder: (options?: { model?: string }) => {
          asked.push(options);
          return providers.embedder();
        },
      };
      await searchChunks({ db: t.db, providers: recording }, 'Kantine', settings);
      await verifyIndex({ db: t.db, providers: recording }, settings);
      expect(asked).to.deep.equal([{ model: 'bge-m3' }, { model: 'bge-m3' }]);

      await retractDocument(t.db, providers, id);
      expect(await index.count('handbuch')).to.equal(0);
    });

    it('an older version whose file has a newer latest version gets no points', async () => {
      const ops: string[] = [];
      const providers = makeProviders(createLocalEmbedder(), recordingIndex(index, ops));
      const v1 = await insertDocument(t.db, { sourcePath: '/src/c.md', title: 'C', isLatest: false });
      await insertChunks(t.db, v1, ['Alt eins.', 'Alt zwei.']);
      await insertDocument(t.db, {
        sourcePath: '/src/c.md',
        title: 'C',
        version: 2,
        isLatest: true,
        previousId: v1,
      });
      // another file's latest version does not count
      await insertDocument(t.db, { sourcePath: '/src/d.md', title: 'D', version: 5, isLatest: true });
      const ctx = makeCtx({
        db: t.db,
        providers,
        config: embedConfig,
        type: 'embed',
        document: { id: v1, sourcePath: '/src/c.md', action: 'update' },
      });
      await embed.run(ctx);
      expect(ops).to.deep.equal([`delete ${v1}`]);
      expect(await index.count('documents')).to.equal(0);
      expect(ctx.reports[0]).to.include({ pointsStored: 0, versionsRemoved: 1 });
    });

    it('with a vector_store step, embed only embeds and vector_store stores', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const stepTypes = [
        'detect',
        'extract',
        'chunk',
        'embed',
        'collection_setup',
        'vector_store',
        'index_optimize',
      ];
      const setupCtx = makeCtx({
        db: t.db,
        providers,
        config: { collections: ['documents', 'mail', 'entities'], distance: 'Cosine' as const },
        type: 'collection_setup',
        stepTypes,
      });
      await collectionSetup.run(setupCtx as any);
      expect((await index.describeCollection('mail')).exists).to.equal(true);

      const docId = await insertDocument(t.db, { sourcePath: '/src/c.txt' });
      await insertChunks(t.db, docId, ['Eins.', 'Zwei.']);
      const document = { id: docId, sourcePath: '/src/c.txt' };
      await embed.run(
        makeCtx({ db: t.db, providers, config: embedConfig, type: 'embed', document, stepTypes }),
      );
      expect(await index.count('documents')).to.equal(0);
      const storeCtx = makeCtx({
        db: t.db,
        providers,
        config: { collection: 'documents' },
        type: 'vector_store',
        document,
        stepTypes,
      });
      await vectorStore.run(storeCtx);
      expect(await index.count('documents')).to.equal(2);
      expect(storeCtx.reports[0]).to.include({ itemsIn: 2, itemsOut: 2 });
      // the title falls back to the file name
      expect(
        (await index.search('documents', (await createLocalEmbedder().embed(['Eins']))[0], { limit: 1 }))[0]
          .payload.document_title,
      ).to.equal('c.txt');

      const optimizeCtx = makeCtx({
        db: t.db,
        providers,
        config: { collections: ['documents'] },
        type: 'index_optimize',
        stepTypes,
      });
      await indexOptimize.run(optimizeCtx as any);
      expect(optimizeCtx.reports[0]).to.include({ itemsOut: 1 });
    });

    it('collection_setup refuses a collection built with another model', async () => {
      await index.ensureCollection('documents', {
        size: 1024,
        distance: 'Cosine',
        model: 'mxbai-embed-large',
      });
      const ctx = makeCtx({
        db: t.db,
        providers: makeProviders(createLocalEmbedder(), index),
        config: { collections: ['documents'], distance: 'Cosine' as const },
        type: 'collection_setup',
      });
      try {
        await collectionSetup.run(ctx as any);
        expect.fail('expected a refusal');
      } catch (e) {
        expect((e as CpeError).code).to.equal('COLLECTION_MISMATCH');
        expect((e as Error).message).to.match(
          /built with mxbai-embed-large \(1024 dimensions\), but the configured embedder is local-hash-v2/,
        );
        expect((e as Error).message).to.include('use a new collection');
      }
    });

    it('a search refuses a collection built with local-hash-v1: v2 vectors are not comparable', async () => {
      await index.ensureCollection('documents', { size: 1024, distance: 'Cosine', model: 'local-hash-v1' });
      await index.upsert('documents', [
        {
          id: chunkPointId(1, 0),
          vector: new Float32Array(1024).fill(1 / 32),
          payload: { document_id: 1, chunk_index: 0 },
        },
      ]);
      try {
        await searchChunks({ db: t.db, providers: makeProviders(createLocalEmbedder(), index) }, 'Urlaub');
        expect.fail('expected a refusal');
      } catch (e) {
        expect((e as CpeError).code).to.equal('COLLECTION_MISMATCH');
        expect((e as Error).message).to.match(
          /built with local-hash-v1 \(1024 dimensions\), but the configured embedder is local-hash-v2/,
        );
      }
    });

    it('search, context and verify work over current documents only', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const services = { db: t.db, providers };
      const d1 = await insertDocument(t.db, { sourcePath: '/src/handbuch.pdf', title: 'Handbuch' });
      await insertChunks(t.db, d1, GERMAN);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id: d1, sourcePath: '/src/handbuch.pdf' },
        }),
      );
      const d2 = await insertDocument(t.db, { sourcePath: '/src/urlaub.md', title: 'Urlaubsregelung' });
      await insertChunks(t.db, d2, [
        'Urlaubsanträge stellen Sie bis zum 31. März. Resturlaub verfällt am Jahresende.',
      ]);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id: d2, sourcePath: '/src/urlaub.md' },
        }),
      );

      const hits = await searchChunks(services, 'Gefährdungsbeurteilung am Arbeitsplatz', { limit: 3 });
      expect(hits[0]).to.deep.include({
        document_id: d1,
        document_title: 'Handbuch',
        chunk_index: 0,
        page: 3,
        heading_path: ['Arbeitsschutz', 'Gefährdungsbeurteilung'],
        source_path: '/src/handbuch.pdf',
      });
      expect(hits[0].score).to.be.greaterThan(hits[1].score);
      const urlaub = await searchChunks(services, 'Urlaubsanspruch Arbeitstage', { limit: 2 });
      expect(urlaub[0].chunk_index).to.equal(1);
      expect(urlaub[0].document_id).to.equal(d1);

      // a deleted document is not searched, even while its points are still in the index
      await t.db.run(`UPDATE documents SET status = 'deleted' WHERE id = ?`, [d2]);
      const afterDelete = await searchChunks(services, 'Urlaubsanträge Resturlaub', { limit: 10 });
      expect(afterDelete.map((h) => h.document_id)).to.not.include(d2);

      // two chunks share words with the query (the third none: it is no source)
      const context = await buildContext(services, 'Urlaub am Arbeitsplatz', { maxTokens: 3000 });
      expect(context.text.startsWith('[Quelle 1: Handbuch]\n')).to.equal(true);
      expect(context.sources.map((s) => s.chunk_index)).to.have.members([0, 1]);
      expect(context.text.split('\n\n---\n\n')).to.have.length(context.sources.length);
      expect(context.sources[0]).to.include({ n: 1, title: 'Handbuch', path: '/src/handbuch.pdf' });
      const small = await buildContext(services, 'Urlaub am Arbeitsplatz', { maxTokens: 40 });
      expect(small.sources.length).to.be.lessThan(context.sources.length);
      expect(small.tokens).to.be.at.most(40);
      for (const maxTokens of [0, -1, 2.5]) {
        const refused = await buildContext(services, 'Urlaub', { maxTokens }).catch((e: unknown) => e);
        expect(refused, String(maxTokens)).to.be.instanceOf(CpeError).and.include({ code: ErrorCodes.USAGE });
        expect((refused as Error).message).to.equal('max-tokens must be a positive integer');
      }

      // verify: the deleted document's point is stale; a hand-made orphan and a lost point are found
      await index.upsert('documents', [
        {
          id: chunkPointId(999, 0),
          vector: (await createLocalEmbedder().embed(['x']))[0],
          payload: { document_id: 999, chunk_index: 0 },
        },
      ]);
      await index.deletePoints('documents', [chunkPointId(d1, 1)]);
      const report = await verifyIndex(services, {});
      expect(report.ok).to.equal(false);
      expect(report.counts).to.include({ expected: 3, missing: 1, orphans: 1, stale: 1, unembedded: 0 });
      const repaired = await verifyIndex(services, { repair: true });
      expect(repaired.ok).to.equal(true);
      expect(repaired.after?.counts).to.include({ expected: 3, points: 3, missing: 0, orphans: 0, stale: 0 });
      expect((await verifyIndex(services)).ok).to.equal(true);
    });
  });
}
