import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { renderSchema } from '../../../scripts/dump-schema.js';
import { listMigrations } from '../../../src/db/migrate.js';
import { packageRoot } from '../../../src/paths.js';

describe('schema/ and migrations', () => {
  for (const role of ['content', 'log'] as const) {
    it(`schema/${role === 'content' ? 'ki_content' : 'ki_dev'}.sql is the current MariaDB migrations (npm run schema)`, () => {
      const file = path.join(packageRoot, 'schema', role === 'content' ? 'ki_content.sql' : 'ki_dev.sql');
      expect(readFileSync(file, 'utf8')).to.equal(renderSchema(role));
    });

    it(`has the same numbered migrations for SQLite and MariaDB (${role})`, () => {
      const names = (dialect: 'sqlite' | 'mysql') =>
        listMigrations(dialect, role).map((m) => `${m.version}_${m.name}`);
      expect(names('sqlite')).to.deep.equal(names('mysql'));
      expect(names('mysql')[0]).to.equal('1_initial');
    });
  }
});
