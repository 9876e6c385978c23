import { expect } from 'chai';
import type { SqlExecutor } from '../../../src/db/sql.js';
import { RunLog } from '../../../src/engine/run-log.js';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';

for (const backend of testBackends()) {
  describe(`the run log in ki_dev (${backend})`, () => {
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => setup?.cleanup());

    it('keeps the rows it could not write while the database was unreachable, and writes them once, later', async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.log.sql;
        let down = true;
        let refused = 0;
        // ki_dev "down": every INSERT fails as a lost connection does (retryable), until it is back
        const flaky: SqlExecutor = {
          dialect: db.dialect,
          query: (sql, params) => db.query(sql, params),
          transaction: (fn) => db.transaction(fn),
          run: async (sql, params) => {
            if (down && sql.startsWith('INSERT INTO pipeline_log')) {
              refused++;
              throw new CpeError(ErrorCodes.DATABASE_UNAVAILABLE, 'ki_dev: connection lost', {
                retryable: true,
              });
            }
            return db.run(sql, params);
          },
        };
        const log = new RunLog(flaky);
        const runId = await log.startRun({
          pipelineId: null,
          pipelineName: 'p',
          versionHash: null,
          command: 't',
          profile: {},
        });
        const logger = log.logger({ runId });
        for (let i = 0; i < 250; i++) logger.info(`Zeile ${i}`);
        await log.flush();
        expect(refused).to.be.above(0);
        down = false;
        logger.info('danach');
        await log.flush();
        const rows = await db.query<{ message: string }>(
          'SELECT message FROM pipeline_log WHERE run_id = ? ORDER BY id',
          [runId],
        );
        expect(rows.map((r) => r.message)).to.deep.equal([
          ...Array.from({ length: 250 }, (_, i) => `Zeile ${i}`),
          'danach',
        ]);
      } finally {
        await engine.close();
      }
    });

    it('keeps huge messages, reasons and contexts within bounds: every context stays JSON, nothing is lost', async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.log.sql;
        const log = new RunLog(db);
        const runId = await log.startRun({
          pipelineId: null,
          pipelineName: 'p',
          versionHash: null,
          command: 'test',
          profile: {},
        });
        const logger = log.logger({ runId, stepName: 'glossary' });
        logger.info('Begriffe '.repeat(600_000), { terms: 'Feedback '.repeat(1000) });
        logger.info('klein', { n: 1 });
        log.recordStep({
          runId,
          documentId: null,
          queueId: null,
          stepName: 'glossary',
          stepType: 'glossary',
          status: 'skipped',
          reason: 'kein Glossar '.repeat(100_000),
          attempt: 1,
          startedAt: Date.now(),
          finishedAt: Date.now(),
        });
        await log.flush();
        const rows = await db.query<{ message: string; context: string }>(
          'SELECT message, context FROM pipeline_log WHERE run_id = ? ORDER BY id',
          [runId],
        );
        expect(rows).to.have.length(2);
        expect(rows[0]!.message.length).to.be.below(4100);
        expect(rows[0]!.message).to.match(/^Begriffe .*… \(5396000 more characters\)$/);
        const context = JSON.parse(rows[0]!.context);
        expect(context).to.include({
          truncated: true,
          chars: JSON.stringify({ terms: 'Feedback '.repeat(1000) }).length,
        });
        expect(context.start).to.match(/^\{"terms":"Feedback /);
        expect(JSON.parse(rows[1]!.context)).to.deep.equal({ n: 1 });
        const [step] = await db.query<{ reason: string }>(
          'SELECT reason FROM pipeline_step_runs WHERE run_id = ?',
          [runId],
        );
        expect(step!.reason.length).to.be.below(4100);
      } finally {
        await engine.close();
      }
    });

    it("stores counts out of the columns' range in the counts JSON, and loses only a row the database refuses", async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.log.sql;
        let refuse = '';
        // ki_dev refusing one row's value as a strict server does (not a connection that failed: not retryable)
        const strict: SqlExecutor = {
          dialect: db.dialect,
          query: (sql, params) => db.query(sql, params),
          transaction: (fn) => db.transaction(fn),
          run: async (sql, params) => {
            if (refuse && params?.includes(refuse))
              throw new Error(`Data too long for column 'message' at row 1`);
            return db.run(sql, params);
          },
        };
        const log = new RunLog(strict);
        const runId = await log.startRun({
          pipelineId: null,
          pipelineName: 'p',
          versionHash: null,
          command: 'test',
          profile: {},
        });
        const step = (stepName: string, counts: Record<string, number>) =>
          log.recordStep({
            runId,
            documentId: null,
            queueId: null,
            stepName,
            stepType: 'zaehlen',
            status: 'ok',
            attempt: 1,
            startedAt: Date.now(),
            finishedAt: Date.now(),
            counts,
          });
        step('riesig', { itemsIn: 5e9, itemsOut: Number.NaN, tokensIn: 12, tokensOut: -1, pages: 3 });
        step('normal', { itemsIn: 2, itemsOut: 4 });
        const logger = log.logger({ runId });
        logger.info('vorher');
        refuse = 'abgelehnt';
        logger.info('abgelehnt');
        logger.info('nachher');
        await log.flush();
        const steps = await db.query<Record<string, unknown>>(
          'SELECT step_name, items_in, items_out, tokens_in, tokens_out, counts FROM pipeline_step_runs WHERE run_id = ? ORDER BY id',
          [runId],
        );
        expect(
          steps.map((r) => [r.step_name, r.items_in, r.items_out, Number(r.tokens_in), Number(r.tokens_out)]),
        ).to.deep.equal([
          ['riesig', null, null, 12, 0],
          ['normal', 2, 4, 0, 0],
        ]);
        expect(JSON.parse(String(steps[0]!.counts))).to.deep.equal({
          pages: 3,
          itemsIn: 5000000000,
          itemsOut: 'NaN',
          tokensOut: -1,
        });
        const lines = await db.query<{ message: string }>(
          'SELECT message FROM pipeline_log WHERE run_id = ? ORDER BY id',
          [runId],
        );
        expect(lines.map((r) => r.message)).to.deep.equal(['vorher', 'nachher']);
      } finally {
        await engine.close();
      }
    });
  });
}
