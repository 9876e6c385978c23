import { expect } from 'chai';
import {
  chunkContents,
  readChunkTexts,
  rememberWrittenChunks,
  replaceChunks,
} from '../../../src/content/chunk-store.js';
import type { SqlExecutor } from '../../../src/db/sql.js';
import type { ChunkDraft } from '../../../src/text/chunk.js';
import { sha256 } from '../../../src/util/hash.js';
import { backends, insertDocument, openTestDatabases, type TestDatabases } from '../vectors/helpers.js';

const draft = (index: number, content: string): ChunkDraft => ({
  index,
  content,
  start: 0,
  end: content.length,
  tokenCount: 3,
  headingPath: ['Kapitel'],
  pageStart: 1,
  pageEnd: 1,
  sectionIndex: 0,
  metadata: {} as ChunkDraft['metadata'],
});

/** The executor, counting the statements that read chunk texts. */
function counting(db: SqlExecutor): { db: SqlExecutor; contentReads: () => number } {
  let reads = 0;
  const wrapped: SqlExecutor = {
    dialect: db.dialect,
    query: (sql, params) => {
      if (/SELECT id, content FROM chunks/.test(sql)) reads++;
      return db.query(sql, params);
    },
    run: (sql, params) => db.run(sql, params),
    transaction: (fn) => db.transaction(fn),
  };
  return { db: wrapped, contentReads: () => reads };
}

for (const backend of backends()) {
  describe(`chunk texts handed from the chunk step to the steps after it (${backend})`, () => {
    let t: TestDatabases;
    let documentId: number;
    beforeEach(async () => {
      t = await openTestDatabases(backend);
      documentId = await insertDocument(t.db, { sourcePath: '/src/handbuch.md' });
    });
    afterEach(async () => {
      await t.cleanup();
    });

    const rows = () =>
      t.db.query<{ id: number; chunk_index: number; content_hash: string }>(
        'SELECT id, chunk_index, content_hash FROM chunks WHERE document_id = ? ORDER BY chunk_index',
        [documentId],
      );

    /** What the chunk step does: the chunks written, their texts kept in a fresh memo. */
    const chunkStep = async (texts: string[]) => {
      const written = await replaceChunks(
        t.db,
        documentId,
        texts.map((text, i) => draft(i, text)),
        { pipelineVersion: 'test', stepConfigHash: 'test' },
      );
      const memo = new Map<string, unknown>();
      rememberWrittenChunks(memo, written);
      return { written, memo };
    };

    it('takes the texts the chunk step wrote from the memo, without reading them back', async () => {
      const texts = ['Erster Absatz über Brandschutz.', 'Zweiter Absatz: Fluchtwege.', 'Dritter Absatz.'];
      const { written, memo } = await chunkStep(texts);
      expect([...written.values()].map((w) => w.contentHash)).to.deep.equal(
        texts.map((text) => sha256(text)),
      );
      const counted = counting(t.db);
      const contents = await chunkContents(counted.db, memo, await rows());
      expect([...contents.values()]).to.deep.equal(texts);
      expect(counted.contentReads()).to.equal(0);
    });

    it('reads from SQL the texts that changed since, and every text when there is no memo', async () => {
      const { memo } = await chunkStep(['Erster Absatz.', 'Zweiter Absatz.', 'Dritter Absatz.']);
      // edited by SQL after the chunk step: a new text and its hash
      await t.db.run(
        'UPDATE chunks SET content = ?, content_hash = ? WHERE document_id = ? AND chunk_index = 1',
        ['Zweiter Absatz, von Hand berichtigt.', sha256('Zweiter Absatz, von Hand berichtigt.'), documentId],
      );
      const counted = counting(t.db);
      const contents = await chunkContents(counted.db, memo, await rows());
      expect([...contents.values()].sort()).to.deep.equal(
        ['Erster Absatz.', 'Zweiter Absatz, von Hand berichtigt.', 'Dritter Absatz.'].sort(),
      );
      expect(counted.contentReads()).to.equal(1);
      const fromSql = await chunkContents(t.db, undefined, await rows());
      expect([...fromSql.values()]).to.deep.equal([
        'Erster Absatz.',
        'Zweiter Absatz, von Hand berichtigt.',
        'Dritter Absatz.',
      ]);
      // the start of each text, as the point store reads it for a payload
      const ids = (await rows()).map((r) => Number(r.id));
      expect([...(await readChunkTexts(t.db, ids, 6)).values()]).to.deep.equal([
        'Erster',
        'Zweite',
        'Dritte',
      ]);
    });
  });
}
