/**
 * The narrow SQL surface most of cpe talks to. Both drivers use `?` placeholders, so plain SQL is shared;
 * where dialects differ (upserts, SKIP LOCKED, types), code branches on `dialect`.
 */
export type Dialect = 'sqlite' | 'mysql';

export interface RunResult {
  affectedRows: number;
  /** AUTO_INCREMENT / rowid of the last inserted row, when the statement inserted one */
  insertId: number;
}

export interface SqlExecutor {
  readonly dialect: Dialect;
  /** `INSERT ... RETURNING` works here: SQLite and MariaDB 10.5+, not MySQL (unset: it does not) */
  readonly insertReturning?: boolean;
  /** SELECT: rows as plain objects */
  query<T = Record<string, any>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** INSERT/UPDATE/DELETE/DDL */
  run(sql: string, params?: readonly unknown[]): Promise<RunResult>;
  /**
   * Runs fn in one transaction on one connection; nested calls join the outer transaction. On MariaDB/MySQL a
   * transaction the server rolls back as a deadlock victim (or after a lock wait timeout) is run again from the
   * start, so fn may run more than once: it must change nothing but through tx (count and collect in its own
   * variables and return them; touch outer state after the transaction).
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
}

/**
 * A value matched literally by a LIKE pattern with ESCAPE '!' (the one escape character SQLite and MySQL read the
 * same way): its %, _ and ! escaped.
 */
export const escapeLike = (value: string): string => value.replace(/[!%_]/g, (c) => `!${c}`);
