import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { DataSource, QueryRunner } from 'typeorm';
import { ConfigError, ErrorCodes } from '../errors.js';
import { migrationsDir } from '../paths.js';
import { sha256 } from '../util/hash.js';
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
 * MySQL only: how many statements of a migration not yet in cpe_migrations have been applied. DDL commits
 * implicitly there, so a migration stopped half way (a conflicting table, the server gone) cannot be rolled back;
 * the next attempt resumes after the statements recorded here instead of failing on the first one.
 */
const CREATE_PROGRESS_TABLE = `CREATE TABLE IF NOT EXISTS cpe_migration_progress (
  version INT NOT NULL PRIMARY KEY,
  statements INT NOT NULL
)`;

/**
 * MySQL errors that say a DDL statement's change is already there: table, column, index or foreign key exists,
 * or what it drops is gone. Accepted only for the statement a stopped attempt may have applied without recording.
 */
const ALREADY_APPLIED = new Set([
  'ER_TABLE_EXISTS_ERROR',
  'ER_DUP_FIELDNAME',
  'ER_DUP_KEYNAME',
  'ER_FK_DUP_NAME',
  'ER_CANT_DROP_FIELD_OR_KEY',
  'ER_BAD_TABLE_ERROR',
]);

/** A statement's first line, for an error message. */
const firstLine = (statement: string) => {
  const line = statement.split('\n', 1)[0]!.trim();
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
};

/**
 * Applies one migration statement by statement (MySQL), recording each in cpe_migration_progress, and resuming
 * after the ones a previous attempt recorded. The statement right after them may have been applied without being
 * recorded (the process stopped in between): "already exists" from it counts as done. Any other failure names the
 * migration and the statement.
 */
async function applyResumable(
  exec: SqlExecutor,
  runStatement: (sql: string) => Promise<unknown>,
  migration: Migration,
): Promise<void> {
  await exec.run(CREATE_PROGRESS_TABLE);
  const statements = splitStatements(migration.sql);
  const [row] = await exec.query<{ statements: number }>(
    'SELECT statements FROM cpe_migration_progress WHERE version = ?',
    [migration.version],
  );
  const resumed = row !== undefined;
  const from = resumed ? Number(row.statements) : 0;
  if (!resumed)
    await exec.run('INSERT INTO cpe_migration_progress (version, statements) VALUES (?, 0)', [
      migration.version,
    ]);
  for (let i = from; i < statements.length; i++) {
    const statement = statements[i]!;
    try {
      await runStatement(statement);
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      if (!(resumed && i === from && ALREADY_APPLIED.has(code))) {
        const reason = error instanceof Error ? error.message : String(error);
        const kept = i > 0 ? `; the ${i} statement(s) before it are applied and will not be repeated` : '';
        throw new Error(
          `migration ${migration.version} '${migration.name}' stopped at statement ${i + 1} of ${statements.length} (${firstLine(statement)}): ${reason}${kept}. Remove the cause and run cpe again`,
          { cause: error },
        );
      }
    }
    await exec.run('UPDATE cpe_migration_progress SET statements = ? WHERE version = ?', [
      i + 1,
      migration.version,
    ]);
  }
}

/** MySQL's longest lock name, in characters (a longer one is an error there; MariaDB has no limit). */
const MAX_LOCK_NAME = 64;

/**
 * The MariaDB migration lock of one database. Named locks are server-wide: with the database in the name, cpe's
 * data sets on one server do not wait for each other's migrations (a database name too long for the limit is
 * hashed).
 */
export function migrationLockName(database: string, role: DatabaseRole): string {
  const name = `cpe_migrate_${role}:${database}`;
  return name.length <= MAX_LOCK_NAME ? name : `cpe_migrate_${role}:${sha256(database).slice(0, 40)}`;
}

export interface MigrateOptions {
  /** MariaDB: seconds of one wait for the migration lock, asked again while another process holds it (default 60) */
  lockWaitSeconds?: number;
  /** told once when another process is migrating the database and this one waits for it (default: stderr) */
  onWait?: (message: string) => void;
}

/**
 * Takes the MariaDB migration lock of the runner's database, waiting for as long as another process holds it: that
 * one is migrating (0004 and 0008 rebuild tables, which takes minutes on a large data set), and migrating beside it
 * ran the same migrations twice ("Duplicate entry '7' for key 'PRIMARY'"). The lock goes when its holder's
 * connection does, so a process that died does not keep it. Returns the lock's name.
 */
async function takeMigrationLock(
  runner: QueryRunner,
  role: DatabaseRole,
  options: MigrateOptions,
): Promise<string> {
  const [{ database }] = await runner.query('SELECT DATABASE() AS `database`');
  const lockName = migrationLockName(String(database), role);
  const waitSeconds = options.lockWaitSeconds ?? 60;
  const announce = options.onWait ?? ((message) => process.stderr.write(`cpe: ${message}\n`));
  // first without waiting, so that a wait is announced as it begins
  for (let waited = false; ; waited = true) {
    const [{ got }] = await runner.query('SELECT GET_LOCK(?, ?) AS got', [
      lockName,
      waited ? waitSeconds : 0,
    ]);
    if (Number(got) === 1) return lockName;
    if (got === null || got === undefined)
      throw new Error(
        `could not take the migration lock of ${databaseLabel(role)} (${database}): GET_LOCK('${lockName}') failed`,
      );
    if (!waited) announce(`waiting for another process's migration of ${databaseLabel(role)} (${database})`);
  }
}

/** A failed SQLite migration, named as a MariaDB one is (SQLite's own error names neither migration nor file). */
const sqliteMigrationFailed = (migration: Migration, error: unknown): Error =>
  new Error(
    `migration ${migration.version} '${migration.name}' failed: ${error instanceof Error ? error.message : String(error)}; the migrations of this start were rolled back. Remove the cause and run cpe again`,
    { cause: error },
  );

/**
 * The migrations of this cpe a database that has some of them applied still lacks (an upgrade), read without
 * changing anything; none for a new database, which has none applied.
 */
export async function upgradeMigrations(db: SqlExecutor, role: DatabaseRole): Promise<Migration[]> {
  const [table] =
    db.dialect === 'sqlite'
      ? await db.query(
          "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'cpe_migrations'",
        )
      : await db.query(
          "SELECT 1 AS found FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'cpe_migrations'",
        );
  if (!table) return [];
  const rows = await db.query<{ version: number }>('SELECT version FROM cpe_migrations');
  if (rows.length === 0) return [];
  const done = new Set(rows.map((r) => Number(r.version)));
  return listMigrations(db.dialect, role).filter((m) => !done.has(m.version));
}

/**
 * Applies pending migrations. Safe against concurrent processes: SQLite takes the write lock first,
 * MySQL the database's named migration lock. Returns the versions applied.
 */
export async function migrate(
  db: SqlExecutor,
  dataSource: DataSource,
  role: DatabaseRole,
  options: MigrateOptions = {},
): Promise<number[]> {
  const migrations = listMigrations(db.dialect, role);
  const applied: number[] = [];
  const apply = async (exec: SqlExecutor, runMigration: (migration: Migration) => Promise<void>) => {
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
      await runMigration(migration);
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
    await db.transaction((tx) =>
      apply(tx, async (migration) => {
        try {
          raw.exec(migration.sql);
        } catch (error) {
          throw sqliteMigrationFailed(migration, error);
        }
      }),
    );
    return applied;
  }

  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    const lockName = await takeMigrationLock(runner, role, options);
    try {
      const exec = runnerExecutor(runner);
      // MySQL DDL commits implicitly, so migrations are applied statement by statement under the named lock,
      // each recorded, so that a migration stopped half way resumes where it stopped.
      await apply(exec, (migration) =>
        applyResumable(exec, (statement) => runner.query(statement), migration),
      );
      // a recorded migration's progress is no longer needed (kept until the record is written, in case of a stop)
      if (applied.length > 0)
        await exec.run(
          'DELETE FROM cpe_migration_progress WHERE version IN (SELECT version FROM cpe_migrations)',
        );
    } finally {
      await runner.query('SELECT RELEASE_LOCK(?)', [lockName]).catch(() => undefined);
    }
  } finally {
    await runner.release();
  }
  return applied;
}
