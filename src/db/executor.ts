import type { DataSource, QueryRunner } from 'typeorm';
import { CpeError, ErrorCodes } from '../errors.js';
import type { RunResult, SqlExecutor } from './sql.js';
import type { WalCheckpointer } from './wal-checkpointer.js';

/** A promise-chain mutex: SQLite has one connection, so one transaction (or statement) at a time. */
class Mutex {
  private tail: Promise<void> = Promise.resolve();
  async lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.tail;
    this.tail = previous.then(() => next);
    await previous;
    return release;
  }
}

/** mysql2's answer to a write (its ResultSetHeader) as a RunResult. */
const runResult = (header: { affectedRows?: number; insertId?: number } | undefined): RunResult => ({
  affectedRows: header?.affectedRows ?? 0,
  insertId: Number(header?.insertId ?? 0),
});

/**
 * Statements on one MariaDB/MySQL connection through `send`, which answers as mysql2 does (rows for a read, a
 * ResultSetHeader for a write): a transaction's pooled connection, or the migrator's query runner, which holds a
 * named lock on its connection. Its errors are reported as the pool's statements report them (mapMysqlError): a
 * lost connection or a deadlock inside a transaction reaches the caller as a retryable CpeError.
 */
class OneConnectionExecutor implements SqlExecutor {
  readonly dialect = 'mysql' as const;
  constructor(
    private readonly send: (sql: string, params: readonly unknown[]) => Promise<unknown>,
    readonly insertReturning = false,
  ) {}

  private async exec(sql: string, params: readonly unknown[]): Promise<unknown> {
    try {
      return await this.send(sql, params);
    } catch (error) {
      throw mapMysqlError(error);
    }
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return (await this.exec(sql, params)) as T[];
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<RunResult> {
    return runResult((await this.exec(sql, params)) as Parameters<typeof runResult>[0]);
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

/** Statements on a TypeORM query runner of MariaDB/MySQL (the migrator's); its query() answers with mysql2's result. */
export const runnerExecutor = (runner: QueryRunner): SqlExecutor =>
  new OneConnectionExecutor((sql, params) => runner.query(sql, params as unknown[]));

interface BetterSqliteStatement {
  reader: boolean;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
}

interface BetterSqliteConnection {
  prepare(sql: string): BetterSqliteStatement;
}

const bindable = (params: readonly unknown[]) =>
  params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));

/**
 * Statements straight on better-sqlite3's connection (the one TypeORM opened), with prepared statements
 * cached: TypeORM's query runner adds about 0.06 ms per statement, which is most of the cost of a small write.
 */
class DirectSqlite implements SqlExecutor {
  readonly dialect = 'sqlite' as const;
  readonly insertReturning = true;
  private readonly statements = new Map<string, BetterSqliteStatement>();

  constructor(private readonly connection: BetterSqliteConnection) {}

  private prepare(sql: string): BetterSqliteStatement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.connection.prepare(sql);
      if (this.statements.size >= 500) this.statements.delete(this.statements.keys().next().value!);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    const statement = this.prepare(sql);
    if (!statement.reader) {
      statement.run(...bindable(params));
      return [];
    }
    return statement.all(...bindable(params)) as T[];
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<RunResult> {
    const statement = this.prepare(sql);
    if (statement.reader) {
      statement.all(...bindable(params));
      return { affectedRows: 0, insertId: 0 };
    }
    const result = statement.run(...bindable(params));
    return { affectedRows: result.changes, insertId: Number(result.lastInsertRowid) };
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

/**
 * SQLite: the one connection TypeORM opened, guarded by a mutex so that a transaction's statements are not
 * interleaved with other async work. Transactions use BEGIN IMMEDIATE so that two processes on the same file
 * queue up for the write lock instead of deadlocking on a lock upgrade (busy_timeout makes the second wait).
 */
export class SqliteExecutor implements SqlExecutor {
  readonly dialect = 'sqlite' as const;
  readonly insertReturning = true;
  private readonly mutex = new Mutex();
  private readonly inner: DirectSqlite;

  constructor(
    readonly dataSource: DataSource,
    /** WAL checkpoints off this thread, started once the log has grown (see wal-checkpointer.ts) */
    private readonly checkpointer?: WalCheckpointer,
  ) {
    this.inner = new DirectSqlite(
      (dataSource.driver as unknown as { databaseConnection: BetterSqliteConnection }).databaseConnection,
    );
  }

  /** Stops what runs beside the connection (the checkpoint thread); the connection itself stays open. */
  async stopBackgroundWork(): Promise<void> {
    await this.checkpointer?.stop();
  }

  async query<T>(sql: string, params?: readonly unknown[]): Promise<T[]> {
    const release = await this.mutex.lock();
    try {
      return await this.inner.query<T>(sql, params);
    } finally {
      release();
    }
  }

  async run(sql: string, params?: readonly unknown[]): Promise<RunResult> {
    const release = await this.mutex.lock();
    try {
      return await this.inner.run(sql, params);
    } finally {
      release();
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const release = await this.mutex.lock();
    try {
      await this.inner.run('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.inner);
        await this.inner.run('COMMIT');
        this.checkpointer?.afterCommit();
        return result;
      } catch (error) {
        await this.inner.run('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } finally {
      release();
    }
  }
}

/** How a MariaDB/MySQL error may be retried: `connection` (lost or refused), `conflict` (deadlock, lock wait). */
export type MysqlErrorKind = 'connection' | 'conflict';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  'ER_CONNECTION_KILLED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
]);
// 1053 server shutdown, 1040 too many connections, 1927 connection killed (MariaDB), 4031 idle timeout
const CONNECTION_ERRNOS = new Set([1053, 1040, 1927, 4031]);
// 1213 deadlock, 1205 lock wait timeout, 1020 record changed since last read (MariaDB optimistic check)
const CONFLICT_ERRNOS = new Set([1213, 1205, 1020]);

/** Classifies a mysql2 (or TypeORM-wrapped) error; undefined = not worth retrying (syntax, constraint, ...). */
export function classifyMysqlError(error: unknown): MysqlErrorKind | undefined {
  // TypeORM keeps the driver's error as driverError; other causes (an Ollama socket error) are not the database's
  for (let e: any = error, depth = 0; e && depth < 3; e = e.driverError, depth++) {
    if (e instanceof CpeError) {
      if (e.code === ErrorCodes.DATABASE_UNAVAILABLE) return 'connection';
      if (e.code === ErrorCodes.DATABASE_CONFLICT) return 'conflict';
    }
    if (CONFLICT_ERRNOS.has(e.errno)) return 'conflict';
    if (CONNECTION_CODES.has(e.code) || CONNECTION_ERRNOS.has(e.errno)) return 'connection';
    if (e.fatal === true && typeof e.message === 'string' && !/pool is closed/i.test(e.message))
      return 'connection';
    if (typeof e.message === 'string' && /connection is in closed state|connection lost/i.test(e.message)) {
      return 'connection';
    }
  }
  return undefined;
}

/**
 * A database error as cpe reports it: connection problems and lock conflicts become retryable CpeErrors (so a
 * step, a claim or a queue item is tried again instead of failing for good); anything else is left as it is.
 */
export function mapMysqlError(error: unknown): unknown {
  if (error instanceof CpeError) return error;
  const kind = classifyMysqlError(error);
  if (!kind) return error;
  const message = error instanceof Error ? error.message : String(error);
  return kind === 'connection'
    ? new CpeError(ErrorCodes.DATABASE_UNAVAILABLE, `database unavailable: ${message}`, {
        cause: error,
        retryable: true,
      })
    : new CpeError(ErrorCodes.DATABASE_CONFLICT, `database lock conflict: ${message}`, {
        cause: error,
        retryable: true,
      });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Tries of a statement or transaction the server rolls back for a lock conflict (deadlock, lock wait timeout). */
const CONFLICT_ATTEMPTS = 5;
/**
 * The pause before a statement or transaction is tried again: 25 ms doubling, capped at a second, each drawn from
 * its upper half, so that the two sides of a deadlock do not meet again in step.
 */
const retryPauseMs = (attempt: number) => Math.min(1000, 25 * 2 ** attempt) * (0.5 + Math.random() / 2);
const READ_ONLY = /^\s*(SELECT|WITH|SHOW|EXPLAIN|DESCRIBE)\b/i;

export interface MysqlExecutorOptions {
  /** how long a statement waits for the server to accept connections again (default 30000 ms) */
  reconnectMs?: number;
  /** the server takes INSERT ... RETURNING (MariaDB; see mysqlServerReturns) */
  insertReturning?: boolean;
}

/** Whether the server takes INSERT ... RETURNING: MariaDB 10.5+ does, MySQL does not. */
export async function mysqlServerReturns(dataSource: DataSource): Promise<boolean> {
  const [row] = (await dataSource.query('SELECT VERSION() AS v')) as Array<{ v: string }>;
  const version = String(row?.v ?? '');
  const [major = 0, minor = 0] = (/^(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  return /mariadb/i.test(version) && (major > 10 || (major === 10 && minor >= 5));
}

/** The part of mysql2's callback API used here. */
interface MysqlConnection {
  query(sql: string, values: unknown[], callback: (error: Error | null, result: unknown) => void): void;
  release(): void;
  destroy(): void;
}

interface MysqlPool {
  getConnection(callback: (error: Error | null, connection: MysqlConnection) => void): void;
}

/** One statement on a pooled connection, as a promise. */
const send = <T>(connection: MysqlConnection, sql: string, params: readonly unknown[]): Promise<T> =>
  new Promise((resolve, reject) => {
    connection.query(sql, params as unknown[], (error, result) =>
      error ? reject(error) : resolve(result as T),
    );
  });

/**
 * MariaDB/MySQL: statements go straight to mysql2's pool (the one TypeORM created, with its connection options:
 * charset, date strings, time zone); a transaction holds one pooled connection. TypeORM's query runner, its
 * promise wrapper (which captures a stack trace for every statement) and its result objects took ~15% of the
 * engine's CPU per document on MariaDB (1,000 no-op documents, bench/engine.ts); migrations still use it.
 *
 * Built for many workers on one server: every connection runs READ COMMITTED (no gap locks, so concurrent
 * workers writing rows of different documents do not deadlock each other); a statement that could not get a
 * connection waits for the server with capped backoff (a restart), a read is repeated after a lost connection, an
 * autocommit statement or a transaction chosen as a deadlock victim is repeated (the server rolled it back: two
 * runs or workers completing documents, upserting queue rows or cache entries at the same moment). What cannot be
 * repeated safely (a write whose connection broke, a transaction whose connection broke) fails with a retryable
 * CpeError.
 */
export class MysqlExecutor implements SqlExecutor {
  readonly dialect = 'mysql' as const;
  private readonly configured = new WeakSet<object>();
  private readonly reconnectMs: number;
  readonly insertReturning: boolean;

  constructor(
    readonly dataSource: DataSource,
    options: MysqlExecutorOptions = {},
  ) {
    this.reconnectMs = options.reconnectMs ?? 30_000;
    this.insertReturning = options.insertReturning ?? false;
  }

  /** the pool TypeORM opened with the data source (it is gone once the data source is destroyed) */
  private get pool(): MysqlPool {
    const pool = (this.dataSource.driver as unknown as { pool?: MysqlPool }).pool;
    if (!pool || !this.dataSource.isInitialized)
      throw new CpeError(ErrorCodes.DATABASE_UNAVAILABLE, 'database connection pool is closed');
    return pool;
  }

  private connect(): Promise<MysqlConnection> {
    const pool = this.pool;
    return new Promise((resolve, reject) => {
      pool.getConnection((error, connection) => (error ? reject(error) : resolve(connection)));
    });
  }

  /** A live pooled connection; waits (capped backoff) while the server refuses connections. */
  private async acquire(): Promise<MysqlConnection> {
    const deadline = Date.now() + this.reconnectMs;
    for (let attempt = 0; ; attempt++) {
      let connection: MysqlConnection | undefined;
      try {
        connection = await this.connect();
        if (!this.configured.has(connection)) {
          await send(connection, 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED', []);
          this.configured.add(connection);
        }
        return connection;
      } catch (error) {
        if (connection) this.discard(connection, true);
        if (
          classifyMysqlError(error) !== 'connection' ||
          Date.now() >= deadline ||
          !this.dataSource.isInitialized
        ) {
          throw mapMysqlError(error);
        }
        await pause(Math.min(2000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2));
      }
    }
  }

  /** Gives the connection back, or destroys it when it broke (the pool must not hand it out again). */
  private discard(connection: MysqlConnection, broken = false): void {
    try {
      if (broken) connection.destroy();
      else connection.release();
    } catch {
      /* a connection that is already gone cannot be released */
    }
  }

  /** One statement on its own connection, repeated where that is safe (see the class comment). */
  private async statement<T>(sql: string, params: readonly unknown[]): Promise<T> {
    const deadline = Date.now() + this.reconnectMs;
    for (let attempt = 1; ; attempt++) {
      const connection = await this.acquire();
      let broken = false;
      try {
        return await send<T>(connection, sql, params);
      } catch (error) {
        const kind = classifyMysqlError(error);
        broken = kind === 'connection';
        const again =
          (kind === 'conflict' && attempt < CONFLICT_ATTEMPTS) ||
          (kind === 'connection' && READ_ONLY.test(sql) && Date.now() < deadline);
        if (!again) throw mapMysqlError(error);
      } finally {
        this.discard(connection, broken);
      }
      await pause(retryPauseMs(attempt));
    }
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.statement<T[]>(sql, params);
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<RunResult> {
    return runResult(await this.statement(sql, params));
  }

  /**
   * fn in one transaction; run again from the start (up to CONFLICT_ATTEMPTS times, after a short randomised
   * pause) when the server rolls it back for a deadlock or a lock wait timeout: see SqlExecutor.transaction.
   */
  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.transactionOnce(fn);
      } catch (error) {
        if (attempt >= CONFLICT_ATTEMPTS || classifyMysqlError(error) !== 'conflict') throw error;
      }
      await pause(retryPauseMs(attempt));
    }
  }

  private async transactionOnce<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const connection = await this.acquire();
    let broken = false;
    try {
      await send(connection, 'START TRANSACTION', []);
      try {
        const result = await fn(
          new OneConnectionExecutor((sql, params) => send(connection, sql, params), this.insertReturning),
        );
        await send(connection, 'COMMIT', []);
        return result;
      } catch (error) {
        await send(connection, 'ROLLBACK', []).catch(() => undefined);
        throw error;
      }
    } catch (error) {
      broken = classifyMysqlError(error) === 'connection';
      throw mapMysqlError(error);
    } finally {
      this.discard(connection, broken);
    }
  }
}
