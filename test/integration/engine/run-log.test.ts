import { expect } from 'chai';
import { RunLog } from '../../../src/engine/run-log.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';

for (const backend of testBackends()) {
  describe(`the run log in ki_dev (${backend})`, () => {
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => setup?.cleanup());

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
  });
}
