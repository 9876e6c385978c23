import type { SqlExecutor } from '../../src/db/sql.js';

/**
 * `db` with its `query` and `run` passed through `around`, which calls `next` (the real statement) or not: a test
 * makes one statement fail, or changes what it answers, while everything else reaches the database.
 */
export function interceptSql(
  db: SqlExecutor,
  around: (sql: string, params: unknown[] | undefined, next: () => Promise<unknown>) => Promise<unknown>,
): SqlExecutor {
  return new Proxy(db, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (prop !== 'query' && prop !== 'run') return typeof value === 'function' ? value.bind(target) : value;
      return (sql: string, params?: unknown[]) =>
        around(sql, params, () =>
          (target[prop] as (s: string, p?: unknown[]) => Promise<unknown>)(sql, params),
        );
    },
  });
}
