import { expect } from 'chai';
import { createLocalEmbedder } from '../../../src/embed/local-hash.js';
import type { Embedder } from '../../../src/embed/types.js';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { buildContext } from '../../../src/retrieval/context.js';
import { formatContext, formatSearchHits } from '../../../src/retrieval/format.js';
import { MAX_SEARCH_LIMIT, searchChunks } from '../../../src/retrieval/search.js';
import { SqlVectorIndex } from '../../../src/vectors/sql-vector-index.js';
import embed from '../../../steps/embed.js';
import {
  backends,
  insertChunks,
  insertDocument,
  makeCtx,
  makeProviders,
  openTestDatabases,
  type TestDatabases,
} from './helpers.js';

const embedConfig = { batch_size: 256, max_embed_chars: 800, collection: 'documents' };

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
