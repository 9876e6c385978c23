import { expect } from 'chai';
import { createLocalEmbedder } from '../../../src/embed/local-hash.js';
import { chunkEmbedText, queryEmbedText } from '../../../src/embed/prepare.js';
import type { Embedder } from '../../../src/embed/types.js';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { buildContext } from '../../../src/retrieval/context.js';
import { formatContext, formatSearchHits } from '../../../src/retrieval/format.js';
import { MAX_SEARCH_LIMIT, RERANK_POOL, searchChunks } from '../../../src/retrieval/search.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import { SqlVectorIndex } from '../../../src/vectors/sql-vector-index.js';
import embed from '../../../steps/embed.js';
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

/**
 * The local embedder's vectors with an embedder of a context window, as Ollama's is: the texts it is asked to embed
 * are recorded, and a text without words gets a vector all the same (a dense model returns one for anything).
 */
function ollamaLike(): Embedder & { texts: string[] } {
  const inner = createLocalEmbedder();
  const texts: string[] = [];
  return {
    model: inner.model,
    dimensions: inner.dimensions,
    kind: 'ollama',
    location: 'http://ollama.test',
    texts,
    embed: async (input, signal) => {
      texts.push(...input);
      const vectors = await inner.embed(input, signal);
      return vectors.map((v) => (v.some((x) => x !== 0) ? v : new Float32Array(v.length).fill(1 / 32)));
    },
  };
}

const CHUNKS = [
  'Die Kantine öffnet um 11:30 Uhr und schließt um 14 Uhr.',
  'Fluchtwege sind freizuhalten. Feuerlöscher werden jährlich geprüft.',
  'Urlaubsanträge stellen Sie bis zum 31. März. Der Kündigungsschutz gilt nach sechs Monaten.',
];

/**
 * Chunks of made-up words (a fixed seed): 40 that share no feature with the query "xq" and, last, one of as many
 * words that has "xq" among them. Each has hundreds of features, so many of them score above 0 with a query by
 * bucket collisions alone: with "xq", 21 of them above the one chunk that has it (the test checks that).
 */
function wordListChunks(): string[] {
  let seed = 33;
  const random = () => {
    seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0;
    return ((seed >>> 0) % 100000) / 100000;
  };
  const letters = 'abcdefghiklmnoprstuvwyz';
  const word = () =>
    Array.from(
      { length: 5 + Math.floor(random() * 6) },
      () => letters[Math.floor(random() * letters.length)],
    ).join('');
  const words = (n: number) => Array.from({ length: n }, word).join(' ');
  const noise = Array.from({ length: 40 }, () => words(150));
  return [...noise, `${words(150)} xq ${words(150)}`];
}

for (const backend of backends()) {
  describe(`search and context queries on ${backend} (embedded index, local embedder)`, () => {
    let t: TestDatabases;
    let index: SqlVectorIndex;

    beforeEach(async () => {
      t = await openTestDatabases(backend);
      index = new SqlVectorIndex(t.db);
    });
    afterEach(async () => {
      await t.cleanup();
    });

    /** One document of CHUNKS, embedded and stored by the embed step with this embedder. */
    async function ingest(embedder: Embedder = createLocalEmbedder()) {
      const providers = makeProviders(embedder, index);
      const id = await insertDocument(t.db, {
        sourcePath: '/src/handbuch.md',
        title: 'Handbuch',
        status: 'done',
      });
      await insertChunks(t.db, id, CHUNKS);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id, sourcePath: '/src/handbuch.md' },
        }),
      );
      return { db: t.db, providers };
    }

    it('returns no chunk that shares nothing with the query, and then says that nothing matched', async () => {
      const services = await ingest();
      // "007" has no feature in common with any chunk: every chunk scored 0 and came back as a hit
      const none = await searchChunks(services, '007', { limit: 10 });
      expect(none).to.deep.equal([]);
      expect(formatSearchHits('007', none)).to.equal('No results for "007".');
      const context = await buildContext(services, '007');
      expect(context).to.deep.include({ text: '', sources: [], matched: 0 });
      expect(formatContext(context, '007')).to.equal('No context for "007": no chunk matches it.');
      // a query that is about none of them: what scores at or below 0 is left out
      const unrelated = await searchChunks(services, 'Vulkan', { limit: 10 });
      expect(unrelated.length).to.be.lessThan(CHUNKS.length);
      expect(unrelated.every((hit) => hit.score > 0)).to.equal(true);
      const found = await searchChunks(services, 'Kantine', { limit: 10 });
      expect(found[0]?.chunk_index).to.equal(0);
      expect(found.every((hit) => hit.score > 0)).to.equal(true);
    });

    it('finds no chunk for a query it shares only hash buckets with, and looks further down for one it shares a word with', async () => {
      const embedder = createLocalEmbedder();
      const services = { db: t.db, providers: makeProviders(embedder, index) };
      const id = await insertDocument(t.db, {
        sourcePath: '/src/wortliste.md',
        title: 'Wortliste',
        status: 'done',
      });
      const chunks = wordListChunks();
      const chunkIds = await insertChunks(t.db, id, chunks);
      await embed.run(
        makeCtx({
          db: t.db,
          providers: services.providers,
          config: embedConfig,
          type: 'embed',
          document: { id, sourcePath: '/src/wortliste.md' },
        }),
      );
      const ranking = async (query: string) => {
        const [vector] = await embedder.embed([queryEmbedText(query, embedder, 800)]);
        return index.search('documents', vector!, { limit: chunks.length });
      };
      // the precondition: chunks sharing nothing with the query score above 0, and above the one that has "xq"
      for (const query of ['你好世界', 'zzz']) {
        expect(
          (await ranking(query)).filter((r) => r.score > 0),
          query,
        ).to.have.length.above(5);
        expect(await searchChunks(services, query), query).to.deep.equal([]);
        const context = await buildContext(services, query);
        expect(context, query).to.deep.include({ text: '', sources: [], matched: 0 });
        expect(formatContext(context, query)).to.equal(`No context for "${query}": no chunk matches it.`);
      }
      const xq = await ranking('xq');
      const real = xq.findIndex((r) => Number(r.payload.chunk_id) === chunkIds.at(-1));
      expect(xq[real]!.score).to.be.above(0);
      expect(real).to.be.above(12);
      const hits = await searchChunks(services, 'xq', { limit: 1 });
      expect(hits.map((h) => h.chunk_id)).to.deep.equal([chunkIds.at(-1)]);
      // its score is what the chunk shares with the query, not the buckets' estimate of it
      expect(hits[0]!.score).to.be.above(0).and.not.equal(xq[real]!.score);

      // a word of the last chunk alone, which the buckets' noise scores below 0 with it (below chunks that share
      // nothing): it was left out with them, and the query found nothing ("925", "URN:NBN" in the corpus)
      const others = new Set(chunks.slice(0, -1).flatMap((chunk) => chunk.split(' ')));
      let drowned: string | undefined;
      for (const word of chunks.at(-1)!.split(' ')) {
        if (others.has(word) || word === 'xq') continue;
        const own = (await ranking(word)).find((r) => Number(r.payload.chunk_id) === chunkIds.at(-1));
        if (own && own.score < 0) {
          drowned = word;
          break;
        }
      }
      expect(drowned, 'a word of the last chunk that scores below 0 with it').to.be.a('string');
      const found = await searchChunks(services, drowned!, { limit: 1 });
      expect(found.map((h) => h.chunk_id)).to.deep.equal([chunkIds.at(-1)]);
    });

    it('orders and cuts equal scores by source path and chunk index, the same on every backend', async () => {
      const services = { db: t.db, providers: makeProviders(createLocalEmbedder(), index) };
      // the same text in six files, stored in the reverse order of their paths: by rowid (SQLite) the last paths
      // come first, by point id (MariaDB) another order
      const text = 'Wie gebe ich Feedback? Feedback geben Sie im Gespräch unter vier Augen.';
      for (const n of [6, 5, 4, 3, 2, 1]) {
        const sourcePath = `/src/feedback-${n}.md`;
        const id = await insertDocument(t.db, { sourcePath, title: 'Feedback', status: 'done' });
        await insertChunks(t.db, id, [text, `Kapitel ${n}`]);
        await embed.run(
          makeCtx({
            db: t.db,
            providers: services.providers,
            config: embedConfig,
            type: 'embed',
            document: { id, sourcePath },
          }),
        );
      }
      const hits = await searchChunks(services, 'Wie gebe ich Feedback?', { limit: 2 });
      expect(hits.map((h) => `${h.source_path}#${h.chunk_index}`)).to.deep.equal([
        '/src/feedback-1.md#0',
        '/src/feedback-2.md#0',
      ]);
      expect(hits[0]!.score).to.equal(hits[1]!.score);
      const context = await buildContext(services, 'Wie gebe ich Feedback?', { limit: 3 });
      expect(context.sources.map((s) => s.path)).to.deep.equal([
        '/src/feedback-1.md',
        '/src/feedback-2.md',
        '/src/feedback-3.md',
      ]);
    });

    it("reads only the hits' chunks from SQL, not every chunk of their documents", async () => {
      const id = await insertDocument(t.db, {
        sourcePath: '/src/kantine.md',
        title: 'Kantine',
        status: 'done',
      });
      await insertChunks(
        t.db,
        id,
        // each of its own score: "Suppe" a different number of times; more than the points scored exactly
        Array.from(
          { length: RERANK_POOL + 60 },
          (_, i) => `Speiseplan: ${'Suppe '.repeat(i + 1)}in der Kantine.`,
        ),
      );
      const providers = makeProviders(createLocalEmbedder(), index);
      await embed.run(
        makeCtx({
          db: t.db,
          providers,
          config: embedConfig,
          type: 'embed',
          document: { id, sourcePath: '/src/kantine.md' },
        }),
      );
      let chunkRows = 0;
      const counting = Object.create(t.db) as typeof t.db;
      counting.query = async <T>(sql: string, params?: readonly unknown[]) => {
        const rows = await t.db.query<T>(sql, params);
        if (/FROM chunks c JOIN documents d/.test(sql)) chunkRows += rows.length;
        return rows;
      };
      const hits = await searchChunks({ db: counting, providers }, 'Kantine', { limit: 1 });
      expect(hits).to.have.length(1);
      // the points the local embedder's estimate ranks first, which are scored exactly, of 260 chunks
      expect(chunkRows).to.be.within(1, RERANK_POOL);
    });

    it('finds the chunk of a point that does not name it by its place, as in a collection made elsewhere', async () => {
      const services = await ingest();
      const [found] = await searchChunks(services, 'Kantine', { limit: 1 });
      expect(found?.chunk_index).to.equal(0);
      const id = chunkPointId(found!.document_id, 0);
      const [vector] = await createLocalEmbedder().embed([
        chunkEmbedText(CHUNKS[0]!, { title: 'Handbuch' }, Number.POSITIVE_INFINITY),
      ]);
      await index.upsert('documents', [
        { id, vector: vector!, payload: { document_id: found!.document_id, chunk_index: 0 } },
      ]);
      const [point] = await t.db.query<{ payload: string }>(
        'SELECT payload FROM vector_points WHERE point_id = ?',
        [id],
      );
      expect(JSON.parse(point!.payload)).to.not.have.property('chunk_id');
      expect(await searchChunks(services, 'Kantine', { limit: 1 })).to.deep.equal([found]);
    });

    it('refuses a query of no words whatever the embedder, by its text', async () => {
      const services = await ingest(ollamaLike());
      for (const query of ['???', '-- …', '\u00ad']) {
        const error = await searchChunks(services, query).catch((e: unknown) => e);
        expect(error, JSON.stringify(query))
          .to.be.instanceOf(CpeError)
          .and.include({ code: ErrorCodes.USAGE });
        expect((error as Error).message).to.equal(
          `the search query '${query.trim()}' has no words to search for`,
        );
      }
      expect((await searchChunks(services, '31. März'))[0]?.chunk_index).to.equal(2);
    });

    it('prepares a query as chunk texts are: the same cap for the embedder, the same normalisation', async () => {
      const services = await ingest();
      // the local embedder reads whole chunks, and so whole queries: a word after 810 dashes is still searched for
      const long = await searchChunks(services, `${'-'.repeat(810)} Kantine`);
      expect(long[0]?.chunk_index).to.equal(0);
      // a soft hyphen (U+00AD) or a decomposed umlaut, as pasted from a PDF, is what extraction removed from the text
      const plain = await searchChunks(services, 'Kündigungsschutz');
      expect(plain[0]?.chunk_index).to.equal(2);
      for (const query of ['Kündigungs\u00adschutz', 'Ku\u0308ndigungsschutz', 'Kündigungs\u200bschutz']) {
        const hits = await searchChunks(services, query);
        expect(
          hits.map((h) => [h.chunk_id, h.score]),
          JSON.stringify(query),
        ).to.deep.equal(plain.map((h) => [h.chunk_id, h.score]));
      }

      // an embedder with a context window is given at most max_embed_chars of a query, as of a chunk
      const ollama = ollamaLike();
      await searchChunks(
        { ...services, providers: makeProviders(ollama, index) },
        `${'Kantine '.repeat(200)}`,
        {
          maxEmbedChars: 800,
        },
      );
      expect(ollama.texts.at(-1)).to.have.length(800);
    });

    it('refuses a limit above the maximum instead of cutting it silently', async () => {
      const services = await ingest();
      expect(MAX_SEARCH_LIMIT).to.equal(2000);
      for (const limit of [2001, 5000]) {
        const error = await searchChunks(services, 'Kantine', { limit }).catch((e: unknown) => e);
        expect(error, String(limit)).to.be.instanceOf(CpeError).and.include({ code: ErrorCodes.USAGE });
        expect((error as Error).message).to.equal(`limit must be at most 2000 (is ${limit})`);
      }
      expect(await searchChunks(services, 'Kantine', { limit: 2000 })).to.have.length.within(
        1,
        CHUNKS.length,
      );
    });
  });
}
