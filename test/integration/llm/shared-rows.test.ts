import { expect } from 'chai';
import { mergeEntityInto, writeEntityMentions } from '../../../src/knowledge/entities.js';
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

    it("keeps an entity another document takes up while this one's cleanup finds it without mentions", async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        const a = await insertDocument(db, { filename: 'a.md', chunks: [{ content: 'Die Kammer A.' }] });
        const b = await insertDocument(db, { filename: 'b.md', chunks: [{ content: 'Die Kammer B.' }] });
        const kammer = (doc: typeof a) => [
          {
            chunkId: doc.chunkIds[0]!,
            name: 'Kammer',
            normalized: 'kammer',
            type: 'ORGANISATION',
            description: 'd',
          },
        ];
        await writeEntityMentions(db, b.ref.id, kammer(b));
        // B no longer mentions the entity; its transaction stops right before it deletes the orphans
        let release!: () => void;
        const gate = new Promise<void>((resolve) => {
          release = resolve;
        });
        let reached!: () => void;
        const atDelete = new Promise<void>((resolve) => {
          reached = resolve;
        });
        const paused = new Proxy(db, {
          get(target, key) {
            if (key !== 'transaction')
              return Reflect.get(target, key).bind?.(target) ?? Reflect.get(target, key);
            return (fn: (tx: typeof db) => Promise<unknown>) =>
              target.transaction((tx) =>
                fn(
                  new Proxy(tx, {
                    get(inner, name) {
                      const value = Reflect.get(inner, name);
                      if (name !== 'run') return typeof value === 'function' ? value.bind(inner) : value;
                      return async (sql: string, params: unknown[]) => {
                        if (sql.startsWith('DELETE FROM entities')) {
                          reached();
                          await gate;
                        }
                        return inner.run(sql, params);
                      };
                    },
                  }),
                ),
              );
          },
        });
        const writingB = writeEntityMentions(paused, b.ref.id, []);
        await atDelete;
        // meanwhile A mentions the entity (found, as it is still there); then B goes on
        const writingA = writeEntityMentions(db, a.ref.id, kammer(a));
        await new Promise((resolve) => setTimeout(resolve, 200));
        release();
        await Promise.all([writingA, writingB]);
        const mentions = await db.query<{ document_id: number }>(
          'SELECT m.document_id FROM entity_mentions m JOIN entities e ON e.id = m.entity_id',
        );
        // on MariaDB (READ COMMITTED) B's delete took A's committed mention with the entity
        expect(mentions.map((m) => Number(m.document_id))).to.deep.equal([a.ref.id]);
      } finally {
        await engine.close();
      }
    });
    it('merges an entity into another: one mention per chunk that names both', async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        const doc = await insertDocument(db, {
          filename: 'm.md',
          chunks: [{ content: 'Die Ausbildungs-Ordnung.' }],
        });
        const chunkId = doc.chunkIds[0]!;
        const { entityIds } = await writeEntityMentions(db, doc.ref.id, [
          {
            chunkId,
            name: 'Ausbildungsordnung',
            normalized: 'ausbildungsordnung',
            type: 'LAW',
            description: '',
          },
          {
            chunkId,
            name: 'Ausbildungs-Ordnung',
            normalized: 'ausbildungs-ordnung',
            type: 'LAW',
            description: '',
          },
        ]);
        expect(await mergeEntityInto(db, entityIds[1]!, entityIds[0]!)).to.equal(true);
        const mentions = await db.query<{ entity_id: number }>('SELECT entity_id FROM entity_mentions');
        expect(mentions.map((m) => Number(m.entity_id))).to.deep.equal([entityIds[0]]);
      } finally {
        await engine.close();
      }
    });
  });
}
