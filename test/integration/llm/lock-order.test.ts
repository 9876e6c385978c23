import { expect } from 'chai';
import type { SqlExecutor } from '../../../src/db/sql.js';
import { type ExtractedMention, writeEntityMentions } from '../../../src/knowledge/entities.js';
import { retractDocumentKnowledge } from '../../../src/knowledge/retract.js';
import { writePlacements } from '../../../src/knowledge/taxonomy.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { type InsertedDocument, insertDocument } from './harness.js';

/**
 * A database whose transactions can be held at a statement, and which counts how often each transaction's work
 * ran: MariaDB runs a transaction it rolled back as a deadlock victim again (up to five times), so a deadlock
 * shows as a second run.
 */
function heldAt(db: SqlExecutor, holdAfter: (sql: string) => boolean) {
  let reached!: () => void;
  let release!: () => void;
  const state = {
    runs: 0,
    reached: new Promise<void>((resolve) => {
      reached = resolve;
    }),
    gate: new Promise<void>((resolve) => {
      release = resolve;
    }),
    release: () => release(),
    db: undefined as unknown as SqlExecutor,
  };
  let held = false;
  const hold = async (sql: string) => {
    if (held || !holdAfter(sql)) return;
    held = true;
    reached();
    await state.gate;
  };
  const wrap = (tx: SqlExecutor): SqlExecutor =>
    new Proxy(tx, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key !== 'query' && key !== 'run') return typeof value === 'function' ? value.bind(target) : value;
        return async (sql: string, params?: unknown[]) => {
          const result = await value.call(target, sql, params);
          await hold(sql);
          return result;
        };
      },
    });
  state.db = new Proxy(db, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== 'transaction') return typeof value === 'function' ? value.bind(target) : value;
      return <T>(fn: (tx: SqlExecutor) => Promise<T>) =>
        target.transaction((tx) => {
          state.runs++;
          return fn(wrap(tx));
        });
    },
  });
  return state;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Both held, or the time is up (a transaction that waits for a lock never gets to its hold). */
const bothReached = (a: Promise<void>, b: Promise<void>) => Promise.race([Promise.all([a, b]), pause(3000)]);

const mentionsOf = (doc: InsertedDocument, names: string[]): ExtractedMention[] =>
  names.map((name) => ({
    chunkId: doc.chunkIds[0]!,
    name,
    normalized: name.toLowerCase(),
    type: 'CONCEPT',
    description: `${name}.`,
  }));

const LOCKING_ENTITY_READ = /^\s*SELECT[\s\S]*\bFROM entities\b[\s\S]*FOR UPDATE\s*$/;
const LOCKING_TERM_READ = /^\s*SELECT[\s\S]*\bFROM taxonomy_terms\b[\s\S]*FOR UPDATE\s*$/;

// only MariaDB/MySQL runs two write transactions at once (SQLite: one at a time, nothing to lock in an order)
for (const backend of testBackends().filter((b) => b === 'mysql')) {
  describe(`documents that share entities and terms, written at the same time (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    let db: SqlExecutor;
    let close: () => Promise<void>;
    let docs: InsertedDocument[];
    beforeEach(async () => {
      setup = createTestSetup(backend);
      const engine = await setup.open();
      db = engine.dbs.content.sql;
      close = () => engine.close();
      docs = [];
      for (const name of ['a', 'b', 'c'])
        docs.push(
          await insertDocument(db, { filename: `${name}.md`, chunks: [{ content: `Text ${name}` }] }),
        );
    });
    afterEach(async () => {
      await close?.();
      await setup?.cleanup();
    });

    it('writes the mentions of two documents naming shared entities in opposite orders without a deadlock', async () => {
      const [a, b, c] = docs as [InsertedDocument, InsertedDocument, InsertedDocument];
      await writeEntityMentions(db, c.ref.id, mentionsOf(c, ['Anker', 'Zeit']));
      // A holds the first entity it locks; B, naming them the other way round, starts meanwhile
      const heldA = heldAt(db, (sql) => LOCKING_ENTITY_READ.test(sql));
      const countedB = heldAt(db, () => false);
      const writingA = writeEntityMentions(heldA.db, a.ref.id, mentionsOf(a, ['Anker', 'Zeit']));
      await heldA.reached;
      const writingB = writeEntityMentions(countedB.db, b.ref.id, mentionsOf(b, ['Zeit', 'Anker']));
      await pause(300);
      heldA.release();
      await Promise.all([writingA, writingB]);
      // before, B locked Zeit and waited for Anker, A then waited for Zeit: one of them was rolled back and run again
      expect({ a: heldA.runs, b: countedB.runs }).to.deep.equal({ a: 1, b: 1 });
      const [{ n }] = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM entity_mentions');
      expect(Number(n)).to.equal(6);
    });

    it("does not lock other documents' entities to find the ones nobody mentions any more", async () => {
      const [a, b] = docs as [InsertedDocument, InsertedDocument];
      await writeEntityMentions(db, a.ref.id, mentionsOf(a, ['Welle']));
      // each holds its own entities, its mentions written, before it looks for entities without mentions
      const heldA = heldAt(db, (sql) => sql.includes('INSERT INTO entity_mentions'));
      const heldB = heldAt(db, (sql) => sql.includes('INSERT INTO entity_mentions'));
      const writingA = writeEntityMentions(heldA.db, a.ref.id, mentionsOf(a, ['Anker']));
      const writingB = writeEntityMentions(heldB.db, b.ref.id, mentionsOf(b, ['Zeit']));
      await bothReached(heldA.reached, heldB.reached);
      heldA.release();
      heldB.release();
      await Promise.all([writingA, writingB]);
      // before, each scanned every entity FOR UPDATE and waited for the other's
      expect({ a: heldA.runs, b: heldB.runs }).to.deep.equal({ a: 1, b: 1 });
      const names = await db.query<{ name: string }>('SELECT name FROM entities ORDER BY name');
      expect(names.map((r) => r.name)).to.deep.equal(['Anker', 'Zeit']);
    });

    it('retracts a document while another one writes mentions of its entities without a deadlock', async () => {
      const [a, b, c] = docs as [InsertedDocument, InsertedDocument, InsertedDocument];
      await writeEntityMentions(db, a.ref.id, mentionsOf(a, ['Anker']));
      await writeEntityMentions(db, c.ref.id, mentionsOf(c, ['Zeit']));
      // B holds the first entity it locks; A's retraction (Anker loses its only mention) starts meanwhile
      const heldB = heldAt(db, (sql) => LOCKING_ENTITY_READ.test(sql));
      const countedA = heldAt(db, () => false);
      const writingB = writeEntityMentions(heldB.db, b.ref.id, mentionsOf(b, ['Zeit', 'Anker']));
      await heldB.reached;
      const retracting = retractDocumentKnowledge(countedA.db, a.ref.id);
      await pause(300);
      heldB.release();
      await Promise.all([writingB, retracting]);
      // before, B held Zeit, the retraction locked Anker (no mentions) and waited for Zeit, B waited for Anker
      expect({ a: countedA.runs, b: heldB.runs }).to.deep.equal({ a: 1, b: 1 });
      const mentioned = await db.query<{ name: string; document_id: number }>(
        'SELECT e.name, m.document_id FROM entity_mentions m JOIN entities e ON e.id = m.entity_id ORDER BY e.name, m.document_id',
      );
      expect(mentioned.map((m) => `${m.name}@${Number(m.document_id)}`)).to.deep.equal([
        `Anker@${b.ref.id}`,
        `Zeit@${b.ref.id}`,
        `Zeit@${c.ref.id}`,
      ]);
    });

    it('files two documents under shared terms in opposite orders without a deadlock', async () => {
      const [a, b, c] = docs as [InsertedDocument, InsertedDocument, InsertedDocument];
      const place = (...paths: string[][]) => paths.map((names) => ({ names, confidence: 0.9 }));
      await writePlacements(db, c.ref.id, place(['Recht'], ['Schulung']));
      const heldA = heldAt(db, (sql) => LOCKING_TERM_READ.test(sql));
      const countedB = heldAt(db, () => false);
      const writingA = writePlacements(heldA.db, a.ref.id, place(['Recht'], ['Schulung']));
      await heldA.reached;
      const writingB = writePlacements(countedB.db, b.ref.id, place(['Schulung'], ['Recht']));
      await pause(300);
      heldA.release();
      await Promise.all([writingA, writingB]);
      expect({ a: heldA.runs, b: countedB.runs }).to.deep.equal({ a: 1, b: 1 });
      const [{ n }] = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM document_taxonomy');
      expect(Number(n)).to.equal(6);
    });

    it("does not lock other documents' terms to find the ones nobody uses any more", async () => {
      const [a, b] = docs as [InsertedDocument, InsertedDocument];
      const place = (...paths: string[][]) => paths.map((names) => ({ names, confidence: 0.9 }));
      await writePlacements(db, a.ref.id, place(['Alt']));
      const heldA = heldAt(db, (sql) => sql.includes('INSERT INTO document_taxonomy'));
      const heldB = heldAt(db, (sql) => sql.includes('INSERT INTO document_taxonomy'));
      const writingA = writePlacements(heldA.db, a.ref.id, place(['Recht', 'Arbeitsrecht']));
      const writingB = writePlacements(heldB.db, b.ref.id, place(['Schulung']));
      await bothReached(heldA.reached, heldB.reached);
      heldA.release();
      heldB.release();
      await Promise.all([writingA, writingB]);
      expect({ a: heldA.runs, b: heldB.runs }).to.deep.equal({ a: 1, b: 1 });
      const paths = await db.query<{ path: string }>('SELECT path FROM taxonomy_terms ORDER BY path');
      expect(paths.map((r) => r.path)).to.deep.equal(['Recht', 'Recht > Arbeitsrecht', 'Schulung']);
    });
  });
}
