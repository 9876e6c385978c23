import { expect } from 'chai';
import mysql from 'mysql2/promise';
import type { SqlExecutor } from '../../../src/db/sql.js';
import type { Engine } from '../../../src/engine/engine.js';
import { CpeError, ErrorCodes, isRetryable } from '../../../src/errors.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';

for (const backend of testBackends()) {
  describe(`the SQL executor (${backend})`, function () {
    this.timeout(60_000);
    let setup: TestSetup;
    let engine: Engine;
    let db: SqlExecutor;

    before(async () => {
      setup = createTestSetup(backend);
      engine = await setup.open();
      db = engine.dbs.content.sql;
      const id = backend === 'mysql' ? 'INTEGER AUTO_INCREMENT PRIMARY KEY' : 'INTEGER PRIMARY KEY';
      await db.run(`CREATE TABLE executor_probe (id ${id}, label VARCHAR(20) NOT NULL UNIQUE, body BLOB)`);
    });
    after(async () => {
      await engine?.close();
      await setup?.cleanup();
    });
    beforeEach(() => db.run('DELETE FROM executor_probe'));

    it('returns rows, affected rows and insert ids, and hands binary values back as bytes', async () => {
      const first = await db.run('INSERT INTO executor_probe (label, body) VALUES (?, ?)', [
        'a',
        Buffer.from([1, 2, 3]),
      ]);
      expect(first.affectedRows).to.equal(1);
      expect(first.insertId).to.be.greaterThan(0);
      await db.run('UPDATE executor_probe SET id = 7 WHERE id = ?', [first.insertId]);
      await db.run('INSERT INTO executor_probe (id, label) VALUES (?, ?), (?, ?)', [8, 'b', 9, 'c']);
      const changed = await db.run('UPDATE executor_probe SET label = CONCAT(label, ?) WHERE id > ?', [
        '!',
        7,
      ]);
      expect(changed.affectedRows).to.equal(2);
      const rows = await db.query<{ id: number; label: string; body: Uint8Array | null }>(
        'SELECT id, label, body FROM executor_probe ORDER BY id',
      );
      expect(rows.map((r) => [Number(r.id), r.label])).to.deep.equal([
        [7, 'a'],
        [8, 'b!'],
        [9, 'c!'],
      ]);
      expect([...(rows[0]!.body as Uint8Array)]).to.deep.equal([1, 2, 3]);
      expect(rows[1]!.body).to.equal(null);
    });

    it('commits a transaction as a whole and rolls it back as a whole', async () => {
      await db.transaction(async (tx) => {
        await tx.run('INSERT INTO executor_probe (id, label) VALUES (?, ?)', [1, 'kept']);
        await tx.run('INSERT INTO executor_probe (id, label) VALUES (?, ?)', [2, 'kept too']);
      });
      const failed = await db
        .transaction(async (tx) => {
          await tx.run('INSERT INTO executor_probe (id, label) VALUES (?, ?)', [3, 'rolled back']);
          await tx.run('INSERT INTO executor_probe (id, label) VALUES (?, ?)', [4, 'kept']); // duplicate label
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(failed).to.be.instanceOf(Error);
      expect((failed as Error).message).to.match(/unique|duplicate/i);
      const rows = await db.query<{ id: number }>('SELECT id FROM executor_probe ORDER BY id');
      expect(rows.map((r) => Number(r.id))).to.deep.equal([1, 2]);
      // the connection the failed transaction used is usable again
      await db.transaction((tx) =>
        tx.run('INSERT INTO executor_probe (id, label) VALUES (?, ?)', [5, 'after']),
      );
      expect(await db.query('SELECT id FROM executor_probe')).to.have.length(3);
    });

    it('reports a statement the server rejects with its message, not as a retryable outage', async () => {
      const error = await db.query('SELECT no_such_column FROM executor_probe').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error);
      expect((error as Error).message).to.match(/no_such_column/);
      expect(error instanceof CpeError && error.retryable).to.equal(false);
    });

    it('runs statements of concurrent callers side by side without mixing up their answers', async () => {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          db.run('INSERT INTO executor_probe (id, label) VALUES (?, ?)', [100 + i, `p${i}`]),
        ),
      );
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          db.query<{ label: string }>('SELECT label FROM executor_probe WHERE id = ?', [100 + i]),
        ),
      );
      expect(answers.map((rows) => rows[0]!.label)).to.deep.equal(
        Array.from({ length: 20 }, (_, i) => `p${i}`),
      );
    });

    if (backend === 'mysql') {
      it('runs a transaction the server picks as a deadlock victim again, and commits it once', async () => {
        await db.run('INSERT INTO executor_probe (id, label) VALUES (1, ?), (2, ?)', ['a', 'b']);
        const [{ name }] = await db.query<{ name: string }>('SELECT DATABASE() AS name');
        const other = await mysql.createConnection({ uri: `${process.env.CPE_TEST_MYSQL_URL}/${name}` });
        try {
          // the other side changes more rows, so the server rolls back the executor's transaction, not it
          await other.query('START TRANSACTION');
          const heavy = Array.from({ length: 200 }, (_, i) => [1000 + i, `h${i}`]);
          await other.query('INSERT INTO executor_probe (id, label) VALUES ?', [heavy]);
          await other.query("UPDATE executor_probe SET label = 'b2' WHERE id = 2");
          let runs = 0;
          let otherDone: Promise<unknown> | undefined;
          await db.transaction(async (tx) => {
            runs++;
            await tx.run("UPDATE executor_probe SET label = 'a1' WHERE id = 1");
            if (runs === 1) {
              // the other side now waits for row 1, held here, while this side asks for row 2, held there
              otherDone = other
                .query("UPDATE executor_probe SET label = 'a2' WHERE id = 1")
                .then(() => other.query('COMMIT'));
              await new Promise((resolve) => setTimeout(resolve, 300));
            }
            await tx.run("UPDATE executor_probe SET label = 'b1' WHERE id = 2");
          });
          await otherDone;
          expect(runs, 'runs of the transaction').to.equal(2);
          const rows = await db.query<{ id: number; label: string }>(
            'SELECT id, label FROM executor_probe WHERE id IN (1, 2) ORDER BY id',
          );
          expect(rows.map((r) => r.label)).to.deep.equal(['a1', 'b1']);
          expect(await db.query('SELECT id FROM executor_probe')).to.have.length(202);
        } finally {
          await other.end();
        }
      });

      it('gives a transaction up after five lock conflicts, and never repeats one that failed otherwise', async () => {
        let runs = 0;
        const conflict = await db
          .transaction(async (tx) => {
            runs++;
            await tx.run('INSERT INTO executor_probe (label) VALUES (?)', [`c${runs}`]);
            throw new CpeError(ErrorCodes.DATABASE_CONFLICT, 'database lock conflict: simulated', {
              retryable: true,
            });
          })
          .catch((e: unknown) => e);
        expect(runs).to.equal(5);
        expect((conflict as CpeError).code).to.equal(ErrorCodes.DATABASE_CONFLICT);
        expect(isRetryable(conflict)).to.equal(true);
        expect(await db.query('SELECT id FROM executor_probe'), 'every try rolled back').to.have.length(0);

        runs = 0;
        const other = await db
          .transaction(async () => {
            runs++;
            throw new Error('not a lock conflict');
          })
          .catch((e: unknown) => e);
        expect(runs).to.equal(1);
        expect((other as Error).message).to.equal('not a lock conflict');
      });
    }

    if (backend === 'sqlite') {
      it('keeps statement journals in memory on both connections, not in temporary files', async () => {
        for (const sql of [engine.dbs.content.sql, engine.dbs.log.sql]) {
          const [row] = await sql.query<{ temp_store: number }>('PRAGMA temp_store');
          expect(row!.temp_store, 'PRAGMA temp_store (2 = memory)').to.equal(2);
        }
      });
    }
  });
}
