import type { SqlExecutor } from '../../src/db/sql.js';

type Around = (sql: string, params: unknown[] | undefined, next: () => Promise<unknown>) => Promise<unknown>;

/**
 * `db` with its `query` and `run` passed through `around`, which calls `next` (the real statement) or not: a test
 * makes one statement fail, delays it, or changes what it answers, while everything else reaches the database.
 * A transaction opened on it (or nested in one, as MariaDB's claim does) is intercepted too.
 */
export function interceptSql(db: SqlExecutor, around: Around): SqlExecutor {
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (prop === 'transaction') {
        return <T>(fn: (tx: SqlExecutor) => Promise<T>) =>
          target.transaction((tx) => fn(interceptSql(tx, around)));
      }
      if (prop !== 'query' && prop !== 'run') return typeof value === 'function' ? value.bind(target) : value;
      return (sql: string, params?: unknown[]) =>
        around(sql, params, () =>
          (target[prop] as (s: string, p?: unknown[]) => Promise<unknown>)(sql, params),
        );
    },
  });
}

/**
 * Every transaction `db` opens from now on (the engine's claims, step writes) runs on an intercepted view of its
 * connection (see interceptSql); statements outside a transaction are left alone.
 */
export function interceptTransactions(db: SqlExecutor, around: Around): void {
  const transaction = db.transaction.bind(db);
  db.transaction = <T>(fn: (tx: SqlExecutor) => Promise<T>) =>
    transaction((tx) => fn(interceptSql(tx, around)));
}
