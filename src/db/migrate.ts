import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { ConfigError, ErrorCodes } from '../errors.js';
import { migrationsDir } from '../paths.js';
import { runnerExecutor } from './executor.js';
import type { SqlExecutor } from './sql.js';

export type DatabaseRole = 'content' | 'log';

/** The database a role stands for, as users know it (ki_content, ki_dev). */
export const databaseLabel = (role: DatabaseRole): string => (role === 'content' ? 'ki_content' : 'ki_dev');

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Numbered migrations of one driver and database: src/db/migrations/<driver>/<role>/NNNN_name.sql */
export function listMigrations(dialect: 'sqlite' | 'mysql', role: DatabaseRole): Migration[] {
  const dir = path.join(migrationsDir, dialect, role);
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      version: Number(f.slice(0, 4)),
      name: f.slice(5, -4),
      sql: readFileSync(path.join(dir, f), 'utf8'),
    }));
}

/** Splits a MySQL migration into statements (our MySQL files hold no procedures or triggers). */
function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*(?:\n|$)/)
    .map((s) =>
      s
        .split('\n')
        .filter((l) => !l.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter(Boolean);
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS cpe_migrations (
  version INT NOT NULL PRIMARY KEY,
  name VARCHAR(190) NOT NULL,
  applied_at VARCHAR(30) NOT NULL
)`;

/**
 * Applies pending migrations. Safe against concurrent processes: SQLite takes the write lock first,
 * MySQL a named lock. Returns the versions applied.
 */
export async function migrate(
  db: SqlExecutor,
  dataSource: DataSource,
  role: DatabaseRole,
): Promise<number[]> {
  const migrations = listMigrations(db.dialect, role);
  const applied: number[] = [];
  const apply = async (exec: SqlExecutor, runRaw: (sql: string) => Promise<void>) => {
    await exec.run(CREATE_TABLE);
    const rows = await exec.query<{ version: number; name: string }>(
      'SELECT version, name FROM cpe_migrations',
    );
    const done = new Set(rows.map((r) => Number(r.version)));
    // a schema a newer cpe has changed may mean what this one does not know: writing to it could break it
    const newest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
    const future = rows.filter((r) => Number(r.version) > newest).sort((a, b) => a.version - b.version);
    if (future.length > 0) {
      const names = future.map((r) => `${r.version} '${r.name}'`).join(', ');
      throw new ConfigError(
        ErrorCodes.CONFIG_INVALID,
        `${databaseLabel(role)} was migrated by a newer cpe: migration ${names} is unknown to this one, which knows up to ${newest}; use that cpe (or a newer one)`,
      );
    }
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      await runRaw(migration.sql);
      await exec.run('INSERT INTO cpe_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        migration.version,
        migration.name,
        new Date().toISOString(),
      ]);
      applied.push(migration.version);
    }
  };

  if (db.dialect === 'sqlite') {
    const raw = (dataSource.driver as unknown as { databaseConnection: { exec(sql: string): void } })
      .databaseConnection;
    await db.transaction((tx) => apply(tx, async (sql) => raw.exec(sql)));
    return applied;
  }

  const lockName = `cpe_migrate_${role}`;
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT GET_LOCK(?, 60)', [lockName]);
    const exec = runnerExecutor(runner);
    // MySQL DDL commits implicitly, so migrations are applied statement by statement under the named lock.
    await apply(exec, async (sql) => {
      for (const statement of splitStatements(sql)) await runner.query(statement);
    });
  } finally {
    await runner.query('SELECT RELEASE_LOCK(?)', [lockName]).catch(() => undefined);
    await runner.release();
  }
  return applied;
}
