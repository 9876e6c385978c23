import type { SqlExecutor } from './sql.js';

/**
 * The id of the row `insert` (an `INSERT INTO t (...) VALUES (...)` of one row) adds, or of the row a unique key of
 * `t` already holds for it. Found-or-created rows shared by documents (entities, taxonomy terms) are looked up
 * first; on MariaDB two documents' transactions may both find nothing and both insert, and the second then failed
 * with ER_DUP_ENTRY (the first's row, committed meanwhile, is not in its snapshot). The upsert waits for the first
 * and takes its row. `update` sets columns of an existing row (`description = COALESCE(description,
 * VALUES(description))`). SQLite has one writer at a time: a lookup in the same transaction is never stale there.
 */
export async function insertOrExistingId(
  db: SqlExecutor,
  insert: string,
  params: readonly unknown[],
  update?: string,
): Promise<number> {
  if (db.dialect !== 'mysql') return (await db.run(insert, params)).insertId;
  const { insertId } = await db.run(
    `${insert} ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)${update ? `, ${update}` : ''}`,
    params,
  );
  return insertId;
}
