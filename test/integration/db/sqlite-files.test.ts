import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { CONTENT_PAGE_SIZE, openDatabases } from '../../../src/db/open.js';
import { WRITER_AUTOCHECKPOINT_BYTES } from '../../../src/db/wal-checkpointer.js';
import { RawSqliteDatabase } from '../../helpers/raw-sqlite.js';

const pragma = async (db: { query<T>(sql: string): Promise<T[]> }, name: string): Promise<number> => {
  const [row] = await db.query<Record<string, unknown>>(`PRAGMA ${name}`);
  return Number(Object.values(row!)[0]);
};

describe('SQLite files of the embedded profile', function () {
  this.timeout(30_000);
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-files-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('creates ki_content with 16 KB pages and ki_dev with SQLite default pages, both in WAL mode', async () => {
    const dbs = await openDatabases({ dataDir });
    try {
      expect(await pragma(dbs.content.sql, 'page_size')).to.equal(CONTENT_PAGE_SIZE);
      expect(await pragma(dbs.log.sql, 'page_size')).to.equal(4096);
      const [{ journal_mode }] = await dbs.content.sql.query<{ journal_mode: string }>('PRAGMA journal_mode');
      expect(journal_mode).to.equal('wal');
      // the writer's own checkpoint threshold is the same number of bytes whatever the page size
      expect(await pragma(dbs.content.sql, 'wal_autocheckpoint')).to.equal(
        WRITER_AUTOCHECKPOINT_BYTES / CONTENT_PAGE_SIZE,
      );
    } finally {
      await dbs.close();
    }
  });

  it('keeps the page size of an existing ki_content file and scales the checkpoint threshold to it', async () => {
    // a file created before 16 KB pages: SQLite's default 4 KB
    const old = new RawSqliteDatabase(path.join(dataDir, 'ki_content.sqlite'));
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE earlier (id INTEGER PRIMARY KEY)');
    old.close();
    const dbs = await openDatabases({ dataDir });
    try {
      expect(await pragma(dbs.content.sql, 'page_size')).to.equal(4096);
      expect(await pragma(dbs.content.sql, 'wal_autocheckpoint')).to.equal(
        WRITER_AUTOCHECKPOINT_BYTES / 4096,
      );
      // and it is usable: migrated like any other
      const [{ n }] = await dbs.content.sql.query<{ n: number }>('SELECT COUNT(*) AS n FROM documents');
      expect(Number(n)).to.equal(0);
    } finally {
      await dbs.close();
    }
  });
});
