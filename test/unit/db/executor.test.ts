import { expect } from 'chai';
import { runnerExecutor } from '../../../src/db/executor.js';
import { CpeError, ErrorCodes, isRetryable } from '../../../src/errors.js';

/** A query runner whose every statement fails with `error`, as mysql2 reports it. */
const failingRunner = (error: Error) =>
  ({
    query: async () => {
      throw error;
    },
  }) as unknown as Parameters<typeof runnerExecutor>[0];

describe('statements on one MariaDB connection (a transaction, the migrator)', () => {
  it('report a deadlock and a lost connection as retryable CpeErrors, as pooled statements do', async () => {
    const deadlock = Object.assign(new Error('Deadlock found when trying to get lock'), {
      errno: 1213,
      code: 'ER_LOCK_DEADLOCK',
    });
    const lost = Object.assign(new Error('Connection lost: The server closed the connection.'), {
      code: 'PROTOCOL_CONNECTION_LOST',
      fatal: true,
    });
    const conflict = await runnerExecutor(failingRunner(deadlock))
      .run('UPDATE t SET x = 1')
      .catch((e) => e);
    expect(conflict).to.be.instanceOf(CpeError);
    expect(conflict.code).to.equal(ErrorCodes.DATABASE_CONFLICT);
    expect(conflict.cause).to.equal(deadlock);
    expect(isRetryable(conflict)).to.equal(true);
    const unavailable = await runnerExecutor(failingRunner(lost))
      .query('SELECT 1')
      .catch((e) => e);
    expect(unavailable).to.be.instanceOf(CpeError);
    expect(unavailable.code).to.equal(ErrorCodes.DATABASE_UNAVAILABLE);
    expect(isRetryable(unavailable)).to.equal(true);
  });

  it('leave other errors as they are', async () => {
    const duplicate = Object.assign(new Error("Duplicate entry 'a' for key 'PRIMARY'"), {
      errno: 1062,
      code: 'ER_DUP_ENTRY',
    });
    const error = await runnerExecutor(failingRunner(duplicate))
      .run('INSERT INTO t VALUES (1)')
      .catch((e) => e);
    expect(error).to.equal(duplicate);
  });
});
