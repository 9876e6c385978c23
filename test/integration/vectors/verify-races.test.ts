import { expect } from 'chai';
import { createLocalEmbedder } from '../../../src/embed/local-hash.js';
import { retractDocument } from '../../../src/engine/retract.js';
import type { CpeError } from '../../../src/errors.js';
import { type EntityRow, entityPointId, storeEntityPoints } from '../../../src/knowledge/entities.js';
import { ENTITY_COLLECTION } from '../../../src/knowledge/retract.js';
import { verifyIndex } from '../../../src/retrieval/verify.js';
import { chunkPointId } from '../../../src/vectors/point-id.js';
import { SqlVectorIndex } from '../../../src/vectors/sql-vector-index.js';
import type { VectorIndex } from '../../../src/vectors/types.js';
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

/** The index with `around` called instead of one of its methods (given the real one). */
function intercepted<K extends keyof VectorIndex>(
  inner: VectorIndex,
  method: K,
  around: (
    real: VectorIndex[K],
    ...args: Parameters<Extract<VectorIndex[K], (...a: any[]) => any>>
  ) => unknown,
): VectorIndex {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== method) return typeof value === 'function' ? value.bind(target) : value;
      return (...args: any[]) => around(value.bind(target), ...(args as any));
    },
  });
}

for (const backend of backends()) {
  describe(`cpe verify --repair while runs go on, and entity points left behind (${backend})`, () => {
    let t: TestDatabases;
    let index: SqlVectorIndex;

    beforeEach(async () => {
      t = await openTestDatabases(backend);
      index = new SqlVectorIndex(t.db);
    });
    afterEach(async () => {
      await t.cleanup();
    });

    /** A document with its chunks, embedded and stored as the embed step does it. */
    const storedDocument = async (providers: ReturnType<typeof makeProviders>, sourcePath: string) => {
      const id = await insertDocument(t.db, { sourcePath, title: sourcePath });
      await insertChunks(t.db, id, [`Erster Absatz von ${sourcePath}.`, `Zweiter Absatz von ${sourcePath}.`]);
      await embed.run(
        makeCtx({ db: t.db, providers, config: embedConfig, type: 'embed', document: { id, sourcePath } }),
      );
      return id;
    };

    it('keeps the points a run stores while verify --repair lists the index', async () => {
      const plain = makeProviders(createLocalEmbedder(), index);
      const old = await storedDocument(plain, '/src/alt.md');
      await t.db.run("UPDATE documents SET status = 'done' WHERE id = ?", [old]);
      // a run makes a new file's document and stores its points while verify lists the collection (a large
      // collection is listed page by page, for a while)
      let fresh: number | undefined;
      const racing = intercepted(index, 'listPoints', async (real, collection) => {
        if (collection === 'documents' && fresh === undefined) {
          fresh = await insertDocument(t.db, { sourcePath: '/src/neu.md', isLatest: false });
          await insertChunks(t.db, fresh, ['Flamingos und Pinguine am Südpol.', 'Noch ein Absatz.']);
          await embed.run(
            makeCtx({
              db: t.db,
              providers: plain,
              config: embedConfig,
              type: 'embed',
              document: { id: fresh, sourcePath: '/src/neu.md' },
            }),
          );
        }
        return real(collection);
      });
      const report = await verifyIndex(
        { db: t.db, providers: makeProviders(createLocalEmbedder(), racing) },
        {
          repair: true,
        },
      );
      expect(fresh).to.be.a('number');
      expect(report.counts).to.include({ orphans: 0, inFlight: 2 });
      expect(report.ok).to.equal(true);
      const points = (await index.listPoints('documents')).map((p) => p.id).sort();
      expect(points).to.deep.equal(
        [old, fresh!].flatMap((id) => [chunkPointId(id, 0), chunkPointId(id, 1)]).sort(),
      );
    });

    it('finds the points of entities whose retraction could not delete them, and repair removes only those', async () => {
      const providers = makeProviders(createLocalEmbedder(), index);
      const services = { db: t.db, providers };
      const id = await storedDocument(providers, '/src/weg.md');
      const [chunk] = await t.db.query<{ id: number }>('SELECT id FROM chunks WHERE document_id = ?', [id]);
      for (const [name, type] of [
        ['Pinguin', 'CONCEPT'],
        ['Südpol', 'LOCATION'],
        ['Flamingo', 'CONCEPT'],
      ]) {
        await t.db.run('INSERT INTO entities (name, normalized_name, type) VALUES (?, ?, ?)', [
          name,
          name.toLowerCase(),
          type,
        ]);
      }
      const entities = await t.db.query<EntityRow>(
        'SELECT id, name, normalized_name, type, description FROM entities ORDER BY id',
      );
      expect(await storeEntityPoints(services, entities)).to.equal(3);
      // only the document mentions Pinguin and Südpol
      for (const entity of entities.slice(0, 2)) {
        await t.db.run(
          'INSERT INTO entity_mentions (entity_id, document_id, chunk_id, mention_text) VALUES (?, ?, ?, ?)',
          [entity.id, id, chunk!.id, entity.name],
        );
      }
      // Flamingo's point is stored, its row does not name it yet (entity_extract names it right after storing)
      await t.db.run('UPDATE entities SET qdrant_id = NULL WHERE id = ?', [entities[2]!.id]);

      // the document is retracted while the index refuses to delete entity points
      const failing = intercepted(index, 'deletePoints', (real, collection, ids) =>
        collection === ENTITY_COLLECTION ? Promise.reject(new Error('index down')) : real(collection, ids),
      );
      const error = (await retractDocument(t.db, makeProviders(createLocalEmbedder(), failing), id).catch(
        (e: unknown) => e,
      )) as CpeError;
      expect(error.message)
        .to.contain('2 points of entities retracted with document')
        .and.contain('cpe verify --repair removes them');
      expect(error.message).to.contain('index down');
      expect(await t.db.query('SELECT id FROM entities')).to.have.length(1);
      expect(await index.listPoints(ENTITY_COLLECTION)).to.have.length(3);

      const gone = entities.slice(0, 2).map((e) => entityPointId(e.normalized_name, e.type));
      const report = await verifyIndex(services);
      expect(report.ok).to.equal(false);
      expect(report.counts.entityOrphans).to.equal(2);
      expect(report.problems.join('\n')).to.contain("2 points in 'entities' belong to no entity in SQL");
      const repaired = await verifyIndex(services, { repair: true });
      expect(repaired.repaired).to.include({ pointsDeleted: 2, entityPointsDeleted: 2 });
      expect(repaired.ok).to.equal(true);
      const left = (await index.listPoints(ENTITY_COLLECTION)).map((p) => p.id);
      expect(left).to.deep.equal([entityPointId('flamingo', 'CONCEPT')]);
      expect(left).to.not.include.members(gone);
    });
  });
}
