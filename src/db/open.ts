import { mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, CpeError, ErrorCodes } from '../errors.js';
import { maskUrl } from '../util/credentials.js';
import { entitySchemas } from './entities.js';
import { classifyMysqlError, MysqlExecutor, mysqlServerReturns, SqliteExecutor } from './executor.js';
import { type DatabaseRole, databaseLabel, migrate, upgradeMigrations } from './migrate.js';
import type { SqlExecutor } from './sql.js';
import { DataSource } from './typeorm.js';
import { WalCheckpointer, WRITER_AUTOCHECKPOINT_PAGES } from './wal-checkpointer.js';

export interface DatabaseSettings {
  /** folder of the SQLite files (embedded default) */
  dataDir: string;
  /** mysql://user:pass@host:3306/ki_content; unset = SQLite */
  dbUrl?: string;
  /** mysql://user:pass@host:3306/ki_dev; unset = SQLite (or the content server's ki_dev when dbUrl is set) */
  logDbUrl?: string;
  /**
   * apply pending migrations on open (default true); 'new-only': create a new database, but refuse to upgrade one
   * that lacks migrations (a dry run changes no data: upgraded, the data would be refused by the cpe before)
   */
  migrate?: boolean | 'new-only';
}

/** A usage error naming the migrations the databases lack, when any does: see `migrate: 'new-only'`. */
async function refuseUpgrade(dbs: readonly OpenDatabase[]): Promise<void> {
  const lacking: string[] = [];
  for (const db of dbs) {
    const pending = await upgradeMigrations(db.sql, db.role);
    if (pending.length > 0)
      lacking.push(
        `${databaseLabel(db.role)} lacks migration ${pending.map((m) => `${m.version} '${m.name}'`).join(', ')}`,
      );
  }
  if (lacking.length > 0)
    throw new ConfigError(
      ErrorCodes.USAGE,
      `${lacking.join('; ')} of this cpe: a dry run changes nothing, so it does not upgrade the data (after which an older cpe refuses it); \`cpe db migrate\`, or any command that is not a dry run, applies them`,
    );
}

export interface OpenDatabase {
  role: DatabaseRole;
  sql: SqlExecutor;
  dataSource: DataSource;
  /** where it lives, password masked: 'sqlite:/x/.cpe/ki_content.sqlite' or 'mysql://root:***@host/ki_content' */
  location: string;
  /** migration versions applied while opening (empty when it was up to date) */
  applied: number[];
  /** after the connection is closed: the file may be opened again in this process (SQLite) */
  release?: () => void;
}

export interface Databases {
  content: OpenDatabase;
  log: OpenDatabase;
  close(): Promise<void>;
}

/** The URL parsed; one that does not parse (a port out of range, say) is a configuration error naming it. */
function parseDatabaseUrl(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new ConfigError(ErrorCodes.CONFIG_INVALID, `database URL ${maskUrl(url)} is not a valid URL`);
  }
}

function databaseName(url: string): string {
  const name = parseDatabaseUrl(url).pathname.replace(/^\//, '');
  if (!/^[A-Za-z0-9_$]+$/.test(name)) {
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `database URL ${maskUrl(url)} must name a database (e.g. /ki_content)`,
    );
  }
  return name;
}

/** Creates the MySQL database named in the URL when it does not exist yet (first use). */
async function ensureMysqlDatabase(url: string): Promise<void> {
  const name = databaseName(url);
  const server = new URL(url);
  server.pathname = '/';
  const admin = new DataSource({ type: 'mysql', url: server.toString(), connectorPackage: 'mysql2' } as any);
  await admin.initialize();
  try {
    await admin.query(
      `CREATE DATABASE IF NOT EXISTS \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
  } finally {
    await admin.destroy();
  }
}

/**
 * Connects to one database (creating a MariaDB database or a SQLite file on first use) without migrating it:
 * openDatabases migrates once both are reachable. Its `applied` is empty until then.
 */
async function connectOne(
  role: DatabaseRole,
  settings: DatabaseSettings,
  url: string | undefined,
): Promise<OpenDatabase> {
  if (url) {
    if (!/^(mysql|mariadb):\/\//.test(url)) {
      throw new ConfigError(
        ErrorCodes.CONFIG_INVALID,
        `database URL ${maskUrl(url)} must start with mysql:// or mariadb://`,
      );
    }
    const mysqlUrl = url.replace(/^mariadb:/, 'mysql:');
    // a URL that cannot be right is the configuration's error (exit 2), found before any connection
    databaseName(mysqlUrl);
    // which database could not be reached, with the URL's password masked (the driver says only host and port)
    // (a connection failure stays one, which `cpe worker` waits out; anything else, bad credentials say, does not)
    const unreachable = (error: unknown) => {
      if (error instanceof ConfigError) return error;
      const message = `${databaseLabel(role)} at ${maskUrl(url)}: ${error instanceof Error ? error.message : String(error)}`;
      return classifyMysqlError(error) === 'connection'
        ? new CpeError(ErrorCodes.DATABASE_UNAVAILABLE, message, { cause: error, retryable: true })
        : new Error(message, { cause: error });
    };
    if (settings.migrate !== false)
      await ensureMysqlDatabase(mysqlUrl).catch((e) => Promise.reject(unreachable(e)));
    const dataSource = new DataSource({
      type: 'mysql',
      url: mysqlUrl,
      connectorPackage: 'mysql2',
      entities: role === 'content' ? entitySchemas.content : entitySchemas.log,
      synchronize: false,
      dateStrings: true,
      timezone: 'Z',
      charset: 'utf8mb4_unicode_ci',
      poolSize: 10,
      // numbers as SQLite gives them: BIGINT ids, sizes, tokens and COUNT(*) as numbers (TypeORM's default sends
      // them as strings, and --json printed "1" on MariaDB where SQLite printed 1); a value past 2^53 still comes
      // as a string rather than rounded (supportBigNumbers). decimalNumbers: SUM() and AVG() answer DECIMAL, and
      // no column is DECIMAL, so only those sums are read as numbers.
      supportBigNumbers: true,
      bigNumberStrings: false,
      extra: { connectTimeout: 10000, decimalNumbers: true },
    } as any);
    await dataSource.initialize().catch((e) => Promise.reject(unreachable(e)));
    return closedOnFailure(dataSource, async () => {
      const sql = new MysqlExecutor(dataSource, { insertReturning: await mysqlServerReturns(dataSource) });
      return { role, sql, dataSource, location: maskUrl(url), applied: [] };
    });
  }

  try {
    mkdirSync(settings.dataDir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    const why = code === 'EEXIST' || code === 'ENOTDIR' ? 'a file is in the way' : code;
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `data folder ${settings.dataDir} cannot be used (${why}): set --data-dir or CPE_DATA_DIR to a folder`,
    );
  }
  const file = path.join(settings.dataDir, role === 'content' ? 'ki_content.sqlite' : 'ki_dev.sqlite');
  const key = path.join(realpathSync(settings.dataDir), path.basename(file));
  if (openSqliteFiles.has(key))
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `${file} is open already in this process: use the cpe opened on it (a second one waits for the first's ` +
        'write lock with the only thread the first needs to release it)',
    );
  openSqliteFiles.add(key);
  const dataSource = new DataSource({
    type: 'better-sqlite3',
    database: file,
    entities: role === 'content' ? entitySchemas.content : entitySchemas.log,
    synchronize: false,
    enableWAL: true,
    timeout: 30000,
    prepareDatabase: (db: any) => {
      db.pragma('synchronous = NORMAL');
      db.pragma('busy_timeout = 30000');
      // A multi-row INSERT inside a transaction keeps a statement journal (what to undo if it fails halfway);
      // past 64 KiB SQLite spills it to a temporary file, created, written and deleted per statement: 48 MB of
      // writes and ~450 files per 1,000 small documents. In memory it is the size of what the statement changed.
      // (Sorts too large for the page cache and temporary tables also stay in memory: cpe's queries sort small
      // sets, a document's, a run's or a search's rows, or read in key order.)
      // Small documents -9% wall time (bench/ingest.ts scaling corpus, package copies A/B), the corpus -2%.
      db.pragma('temp_store = MEMORY');
      // ki_content takes the bulk of the writes: its log is copied back on a thread of its own
      if (role === 'content') db.pragma(`wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
    },
  } as any);
  try {
    await dataSource.initialize();
  } catch (error) {
    openSqliteFiles.delete(key);
    // a folder or file this user may not write (better-sqlite3 says only "attempt to write a readonly database")
    const code = (error as { code?: string }).code ?? '';
    if (/^SQLITE_(READONLY|CANTOPEN|PERM|AUTH)/.test(code))
      throw new ConfigError(
        ErrorCodes.CONFIG_INVALID,
        `${file} cannot be opened for writing (${code}: ${(error as Error).message}): the data folder must be writable; set --data-dir or CPE_DATA_DIR`,
        { cause: error },
      );
    throw error;
  }
  const sql = new SqliteExecutor(dataSource, role === 'content' ? new WalCheckpointer(file) : undefined);
  return {
    role,
    sql,
    dataSource,
    location: `sqlite:${file}`,
    applied: [],
    release: () => openSqliteFiles.delete(key),
  };
}

/**
 * The SQLite files this process has open. better-sqlite3 waits for a lock synchronously (busy_timeout): a second
 * connection of the same process waiting for the first's write lock blocks the thread the first needs to finish
 * its transaction, for 30 s, then fails "database is locked". So a file is opened once per process.
 */
const openSqliteFiles = new Set<string>();

/**
 * What follows opening a connection, with the connection closed when it fails (a server that stops answering):
 * an open MariaDB pool would keep the command from exiting after it printed the error.
 */
async function closedOnFailure<T>(dataSource: DataSource, then: () => Promise<T>): Promise<T> {
  try {
    return await then();
  } catch (error) {
    await dataSource.destroy().catch(() => undefined);
    throw error;
  }
}

/**
 * Opens ki_content and ki_dev. With no URLs: SQLite files in the data folder, created and migrated on first
 * use. With CPE_DB_URL only, ki_dev goes to the same server, database `ki_dev`.
 *
 * Both are connected to before either is migrated, and ki_dev is migrated first: a new ki_content gets its seeded
 * pipelines when its first migration runs (openEngine), so it is migrated only once nothing else can stop the
 * opening. A first start whose ki_dev could not be opened (CPE_LOG_DB_URL forgotten: access denied to `ki_dev`)
 * migrated ki_content and stopped before seeding; the next start found it migrated and never seeded it.
 */
export async function openDatabases(settings: DatabaseSettings): Promise<Databases> {
  let logUrl = settings.logDbUrl;
  if (!logUrl && settings.dbUrl) {
    const derived = parseDatabaseUrl(settings.dbUrl);
    derived.pathname = '/ki_dev';
    logUrl = derived.toString();
  }
  // one database for both: their migrations share one record and contradict each other ("migrated by a newer cpe")
  if (settings.dbUrl && logUrl) {
    const where = (url: string) => {
      const mysqlUrl = url.replace(/^mariadb:/, 'mysql:');
      const { hostname, port } = parseDatabaseUrl(mysqlUrl);
      return `${hostname}:${port || '3306'}/${databaseName(mysqlUrl)}`;
    };
    if (where(settings.dbUrl) === where(logUrl))
      throw new ConfigError(
        ErrorCodes.CONFIG_INVALID,
        `ki_content and ki_dev are one database (${maskUrl(settings.dbUrl)}): give each its own (CPE_DB_URL, CPE_LOG_DB_URL)`,
      );
  }
  const content = await connectOne('content', settings, settings.dbUrl);
  let log: OpenDatabase;
  try {
    log = await connectOne('log', settings, logUrl);
  } catch (error) {
    await closeDatabase(content);
    throw error;
  }
  if (settings.migrate !== false) {
    try {
      if (settings.migrate === 'new-only') await refuseUpgrade([log, content]);
      log.applied = await migrate(log.sql, log.dataSource, 'log');
      content.applied = await migrate(content.sql, content.dataSource, 'content');
    } catch (error) {
      // an open MariaDB pool would keep the command from exiting after it printed the error
      await Promise.allSettled([closeDatabase(content), closeDatabase(log)]);
      throw error;
    }
  }
  return {
    content,
    log,
    async close() {
      await Promise.allSettled([closeDatabase(content), closeDatabase(log)]);
    },
  };
}

/**
 * Closes one database: the checkpoint thread's connection first (the last connection to close checkpoints and
 * removes the log), then its own; the file may then be opened again in this process.
 */
async function closeDatabase(db: OpenDatabase): Promise<void> {
  try {
    if (db.sql instanceof SqliteExecutor) await db.sql.stopBackgroundWork();
    await db.dataSource.destroy();
  } finally {
    db.release?.();
  }
}
