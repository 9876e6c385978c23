import { createRequire } from 'node:module';

/** better-sqlite3 itself (the driver TypeORM uses; it ships no type declarations): the part tests use. */
export interface RawSqlite {
  exec(sql: string): void;
  pragma(source: string): unknown;
  prepare(sql: string): { run(...params: unknown[]): unknown; all(): unknown[] };
  transaction(fn: () => void): () => void;
  close(): void;
}

/** Opens an SQLite file directly, beside cpe's own connections. */
export const RawSqliteDatabase = createRequire(import.meta.url)('better-sqlite3') as new (
  file: string,
) => RawSqlite;
