/**
 * Writes schema/ki_content.sql and schema/ki_dev.sql: the MariaDB migrations of each database, in order, as
 * one readable file for people who work in SQL. `npm run schema`; a unit test checks the files are current.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { listMigrations } from '../src/db/migrate.js';
import { packageRoot } from '../src/paths.js';

export function renderSchema(role: 'content' | 'log'): string {
  const name = role === 'content' ? 'ki_content' : 'ki_dev';
  const parts = listMigrations('mysql', role).map(
    (m) =>
      `-- ---------------------------------------------------------------------------\n-- migration ${String(m.version).padStart(4, '0')}_${m.name}\n-- ---------------------------------------------------------------------------\n\n${m.sql.trim()}\n`,
  );
  return `-- ${name}: reference DDL for MariaDB/MySQL, generated from src/db/migrations/mysql/${role}/ by \`npm run schema\`.\n-- Do not edit: add a numbered migration instead. cpe applies migrations itself (\`cpe db migrate\`).\n\n${parts.join('\n')}`;
}

if (process.argv[1]?.endsWith('dump-schema.ts')) {
  for (const role of ['content', 'log'] as const) {
    const file = path.join(packageRoot, 'schema', role === 'content' ? 'ki_content.sql' : 'ki_dev.sql');
    writeFileSync(file, renderSchema(role));
    process.stdout.write(`wrote ${file}\n`);
  }
}
