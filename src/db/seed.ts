import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { seedsDir } from '../paths.js';
import type { SqlExecutor } from './sql.js';

/** Statements of a seed file: split at `;` that ends a line; comment lines dropped. */
export function seedStatements(sql: string): string[] {
  return sql
    .split(/;\s*\n/)
    .map((s) =>
      s
        .split('\n')
        .filter((line) => !line.trim().startsWith('--'))
        .join('\n')
        .trim()
        .replace(/;$/, ''),
    )
    .filter(Boolean);
}

/**
 * Applies seeds/*.sql in name order, in one transaction. The seed files are idempotent (they insert only what
 * is missing), so seeding twice changes nothing. Returns the number of rows inserted.
 */
export async function seedDatabase(
  db: SqlExecutor,
  dir = seedsDir,
): Promise<{ files: string[]; inserted: number }> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  const inserted = await db.transaction(async (tx) => {
    let rows = 0;
    for (const file of files) {
      for (const statement of seedStatements(readFileSync(path.join(dir, file), 'utf8'))) {
        rows += (await tx.run(statement)).affectedRows;
      }
    }
    return rows;
  });
  return { files, inserted };
}
