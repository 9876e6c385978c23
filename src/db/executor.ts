import type { DataSource, QueryRunner } from 'typeorm';
import type { Dialect, RunResult, SqlExecutor } from './sql.js';

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

/** Runs statements on one TypeORM QueryRunner (a transaction's connection). */
class RunnerExecutor implements SqlExecutor {
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

const bindable = (params: readonly unknown[]) => params.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p));

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

  constructor(readonly dataSource: DataSource) {
    this.inner = new DirectSqlite((dataSource.driver as unknown as { databaseConnection: BetterSqliteConnection }).databaseConnection);
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

/** MariaDB/MySQL: statements go to the pool; a transaction holds one pooled connection. */
export class MysqlExecutor implements SqlExecutor {
  readonly dialect = 'mysql' as const;

  constructor(readonly dataSource: DataSource) {}

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return (await this.dataSource.query(sql, params as unknown[])) as T[];
  }

  async run(sql: string, params: readonly unknown[] = []): Promise<RunResult> {
    const runner = this.dataSource.createQueryRunner();
    try {
      return toRunResult(await runner.query(sql, params as unknown[], true), 'mysql');
    } finally {
      await runner.release();
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
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
    } finally {
      await runner.release();
    }
  }
}
