import type { SqlExecutor } from './sql.js';

/**
 * A name as MariaDB's utf8mb4_unicode_ci compares it, near enough: without case, accents (combining marks) and
 * trailing spaces, ß as ss. Two step names equal under it share one step_checkpoints key there; two entity names
 * equal under it are one entity there (its unique key says so).
 */
export const foldName = (name: string): string =>
  name.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().replace(/ß/g, 'ss').replace(/ +$/, '');

/** Names as the database compares them: folded on MariaDB/MySQL, exactly on SQLite. */
export const comparedName = (db: Pick<SqlExecutor, 'dialect'>): ((name: string) => string) =>
  db.dialect === 'mysql' ? foldName : (name) => name;
