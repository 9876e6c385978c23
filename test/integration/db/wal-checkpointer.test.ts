import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { SqliteExecutor } from '../../../src/db/executor.js';
import { openDatabases } from '../../../src/db/open.js';
import type { WalCheckpointer } from '../../../src/db/wal-checkpointer.js';

/** the executor's checkpoint thread (a private field: what the test looks at, not an API) */
const checkpointerOf = (db: SqliteExecutor) =>
  (db as unknown as { checkpointer: WalCheckpointer }).checkpointer;

describe('WAL checkpoints on their own thread (SQLite ki_content)', function () {
  this.timeout(60_000);

  it('starts once the log has grown, copies it back while the writer only writes, and leaves nothing behind on close', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-wal-'));
    const file = path.join(dataDir, 'ki_content.sqlite');
    const dbs = await openDatabases({ dataDir });
    try {
      const db = dbs.content.sql as SqliteExecutor;
      expect(db).to.be.instanceOf(SqliteExecutor);
      await db.run('CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)');
      // small writes leave the log small: no thread
      await db.transaction(async (tx) => {
        await tx.run('INSERT INTO blobs (body) VALUES (?)', [Buffer.alloc(1024, 1)]);
      });
      expect(checkpointerOf(db).running).to.equal(false);
      const sizeBefore = statSync(file).size;
      // ~8 MB in transactions: past the thread's 4 MB threshold, below the writer's own 8192-page safety net
      const body = Buffer.alloc(64 * 1024, 7);
      for (let i = 0; i < 128; i++) {
        await db.transaction(async (tx) => {
          await tx.run('INSERT INTO blobs (body) VALUES (?)', [body]);
        });
      }
      expect(checkpointerOf(db).running).to.equal(true);
      // the writer has not checkpointed (its threshold is 32 MB): pages reach the database file through the thread
      for (
        let waited = 0;
        statSync(file).size < sizeBefore + 4 * 1024 * 1024 && waited < 5000;
        waited += 50
      ) {
        await sleep(50);
      }
      expect(statSync(file).size).to.be.greaterThan(sizeBefore + 4 * 1024 * 1024);
      const [{ n }] = await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM blobs');
      expect(Number(n)).to.equal(129);
    } finally {
      await dbs.close();
    }
    // the last connection closed checkpointed the rest and removed the log; the data is all in the file
    expect(existsSync(`${file}-wal`)).to.equal(false);
    const again = await openDatabases({ dataDir });
    try {
      const [{ n, bytes }] = await again.content.sql.query<{ n: number; bytes: number }>(
        'SELECT COUNT(*) AS n, SUM(LENGTH(body)) AS bytes FROM blobs',
      );
      expect(Number(n)).to.equal(129);
      expect(Number(bytes)).to.equal(128 * 64 * 1024 + 1024);
    } finally {
      await again.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
