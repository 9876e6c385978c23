import type { DataSource, QueryRunner } from 'typeorm';
import { CpeError, ErrorCodes } from '../errors.js';
import type { Dialect, RunResult, SqlExecutor } from './sql.js';
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

function toRunResult(result: { affected?: number | null; raw: any }, dialect: Dialect): RunResult {
  if (dialect === 'sqlite') return { affectedRows: result.affected ?? 0, insertId: Number(result.raw ?? 0) };
  const header = result.raw ?? {};
  return {
    affectedRows: header.affectedRows ?? result.affected ?? 0,
    insertId: Number(header.insertId ?? 0),
  };
}

/** Runs statements on one TypeORM QueryRunner (a transaction's connection, or the migrator's). */
export class RunnerExecutor implements SqlExecutor {
  constructor(
    readonly dialect: Dialect,
    private readonly runner: QueryRunner,
  ) {}

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return (await this.runner.query(sql, params as unknown[])) as T[];
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<RunResult> {
    return toRunResult(await this.runner.query(sql, params as unknown[], true), this.dialect);
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return fn(this);
  }
}

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
  private readonly mutex = new Mutex();
  private readonly inner: DirectSqlite;

  constructor(
    readonly dataSource: DataSource,
    /** WAL checkpoints off this thread, started with the first write transaction (see wal-checkpointer.ts) */
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
    this.checkpointer?.start();
    const release = await this.mutex.lock();
    try {
      await this.inner.run('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.inner);
        await this.inner.run('COMMIT');
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
const READ_ONLY = /^\s*(SELECT|WITH|SHOW|EXPLAIN|DESCRIBE)\b/i;

export interface MysqlExecutorOptions {
  /** how long a statement waits for the server to accept connections again (default 30000 ms) */
  reconnectMs?: number;
}

/**
 * MariaDB/MySQL: statements go to the pool; a transaction holds one pooled connection.
 *
 * Built for many workers on one server: every connection runs READ COMMITTED (no gap locks, so concurrent
 * workers writing rows of different documents do not deadlock each other); a statement that could not get a
 * connection waits for the server with capped backoff (a restart), a read is repeated after a lost connection, an
 * autocommit statement chosen as a deadlock victim is repeated (the server rolled it back). What cannot be
 * repeated safely (a write whose connection broke, a transaction) fails with a retryable CpeError.
 */
export class MysqlExecutor implements SqlExecutor {
  readonly dialect = 'mysql' as const;
  private readonly configured = new WeakSet<object>();
  private readonly reconnectMs: number;

  constructor(
    readonly dataSource: DataSource,
    options: MysqlExecutorOptions = {},
  ) {
    this.reconnectMs = options.reconnectMs ?? 30_000;
  }

  /** A query runner holding a live connection; waits (capped backoff) while the server refuses connections. */
  private async acquire(): Promise<QueryRunner> {
    const deadline = Date.now() + this.reconnectMs;
    for (let attempt = 0; ; attempt++) {
      // a runner whose connect() failed keeps the rejected promise: every attempt needs a new one
      const runner = this.dataSource.createQueryRunner();
      try {
        const connection = await runner.connect();
        if (!this.configured.has(connection)) {
          await runner.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
          this.configured.add(connection);
        }
        return runner;
      } catch (error) {
        await this.discard(runner);
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
  private async discard(runner: QueryRunner, broken = false): Promise<void> {
    const connection = (runner as unknown as { databaseConnection?: { destroy?: () => void } })
      .databaseConnection;
    try {
      if (broken && connection?.destroy) connection.destroy();
      await runner.release();
    } catch {
      /* a connection that is already gone cannot be released */
    }
  }

  /** One statement on its own connection, repeated where that is safe (see the class comment). */
  private async statement<T>(sql: string, fn: (runner: QueryRunner) => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.reconnectMs;
    for (let attempt = 1; ; attempt++) {
      const runner = await this.acquire();
      let broken = false;
      try {
        return await fn(runner);
      } catch (error) {
        const kind = classifyMysqlError(error);
        broken = kind === 'connection';
        const again =
          (kind === 'conflict' && attempt < 5) ||
          (kind === 'connection' && READ_ONLY.test(sql) && Date.now() < deadline);
        if (!again) throw mapMysqlError(error);
      } finally {
        await this.discard(runner, broken);
      }
      await pause(Math.min(1000, 25 * 2 ** attempt) * (0.5 + Math.random() / 2));
    }
  }

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.statement(sql, async (runner) => (await runner.query(sql, params as unknown[])) as T[]);
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<RunResult> {
    return this.statement(sql, async (runner) =>
      toRunResult(await runner.query(sql, params as unknown[], true), 'mysql'),
    );
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const runner = await this.acquire();
    let broken = false;
    try {
      await runner.startTransaction();
      try {
        const result = await fn(new RunnerExecutor('mysql', runner));
        await runner.commitTransaction();
        return result;
      } catch (error) {
        await runner.rollbackTransaction().catch(() => undefined);
        throw error;
      }
    } catch (error) {
      broken = classifyMysqlError(error) === 'connection';
      throw mapMysqlError(error);
    } finally {
      await this.discard(runner, broken);
    }
  }
}
