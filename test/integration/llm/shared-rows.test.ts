import { expect } from 'chai';
import { writeEntityMentions } from '../../../src/knowledge/entities.js';
import { ensureTermPath } from '../../../src/knowledge/taxonomy.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { insertDocument } from './harness.js';

for (const backend of testBackends()) {
  describe(`rows shared by documents written at the same time (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => setup?.cleanup());

    it('merges an entity and a taxonomy term that several documents create at once into one row each', async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        const docs = [];
        for (let i = 0; i < 6; i++)
          docs.push(
            await insertDocument(db, { filename: `d${i}.md`, chunks: [{ content: `Schulung ${i}` }] }),
          );
        // each document's transaction finds no entity and creates it: on MariaDB the later ones ran into the first
        // one's row (ER_DUP_ENTRY) and failed for good
        const written = await Promise.all(
          docs.map((doc) =>
            writeEntityMentions(db, doc.ref.id, [
              {
                chunkId: doc.chunkIds[0]!,
                name: 'Abschnitt',
                normalized: 'abschnitt',
                type: 'CONCEPT',
                description: `Beschreibung ${doc.ref.id}`,
              },
            ]),
          ),
        );
        const entities = await db.query<{ id: number }>('SELECT id FROM entities');
        expect(entities).to.have.length(1);
        expect(new Set(written.map((w) => w.entityIds[0]))).to.deep.equal(new Set([Number(entities[0]!.id)]));
        const mentions = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM entity_mentions');
        expect(Number(mentions[0]!.n)).to.equal(6);

        const terms = await Promise.all(
          docs.map(() => db.transaction((tx) => ensureTermPath(tx, ['Schulung', 'Kommunikation']))),
        );
        expect(new Set(terms).size).to.equal(1);
        const rows = await db.query<{ path: string }>('SELECT path FROM taxonomy_terms ORDER BY path');
        expect(rows.map((r) => r.path)).to.deep.equal(['Schulung', 'Schulung > Kommunikation']);
      } finally {
        await engine.close();
      }
    });
  });
}
