import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

for (const backend of testBackends()) {
  describe(`checkpoints of steps no longer in the plan (${backend})`, () => {
    let setup: TestSetup;
    let engine: Engine;
    let source: string;
    beforeEach(async () => {
      setup = createTestSetup(backend);
      engine = await setup.open();
      const paragraph = (i: number) =>
        `Absatz ${i}: Jede Massnahme im Lager wird geprueft, dokumentiert und von der Leitung freigegeben. Die Unterweisung erfolgt jaehrlich.`;
      const text = `# Lagerhandbuch\n\n${Array.from({ length: 24 }, (_, i) => paragraph(i)).join('\n\n')}\n`;
      source = makeSourceFolder({ 'lager-a.md': text, 'lager-b.md': text.replace('Lager', 'Werk') });
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const db = () => engine.dbs.content.sql;
    const run = async (name: string) =>
      runPipeline(engine, {
        plan: await planPipeline(db(), engine.registry, name),
        sourceDir: source,
        concurrency: 2,
      });
    /** the document steps a run ran (not skipped), sorted */
    const ranSteps = async (runId: number) =>
      (
        await engine.dbs.log.sql.query<{ step_name: string }>(
          "SELECT step_name FROM pipeline_step_runs WHERE run_id = ? AND document_id IS NOT NULL AND status <> 'skipped'",
          [runId],
        )
      )
        .map((r) => r.step_name)
        .sort();
    /** how many chunks the documents have, and the longest one's length */
    const chunks = async () => {
      const rows = await db().query<{ content: string }>('SELECT content FROM chunks');
      return { count: rows.length, longest: Math.max(...rows.map((r) => r.content.length)) };
    };
    const standard = "(SELECT id FROM pipeline_configs WHERE name = 'Standard')";

    it('runs a step again that comes back after another step of its pipeline replaced its data', async () => {
      await db().run(
        `INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config)
         VALUES (${standard}, 'chunk_small', 'chunk', 31, 0, '{"max_chars": 300}')`,
      );
      const swap = async (enabled: string, disabled: string) => {
        await db().run(`UPDATE pipeline_steps SET enabled = 1 WHERE name = ? AND pipeline_id = ${standard}`, [
          enabled,
        ]);
        await db().run(`UPDATE pipeline_steps SET enabled = 0 WHERE name = ? AND pipeline_id = ${standard}`, [
          disabled,
        ]);
      };

      await run('Standard');
      const large = await chunks();
      expect(large.longest).to.be.greaterThan(300);

      await swap('chunk_small', 'chunk');
      const small = await run('Standard');
      expect(await ranSteps(small.runId)).to.include.members(['chunk_small', 'chunk_small']);
      expect((await chunks()).longest).to.be.at.most(300);
      expect((await chunks()).count).to.be.greaterThan(large.count);

      // 'chunk' is as it was when it last ran, but its chunks are gone: it runs again
      await swap('chunk', 'chunk_small');
      const back = await run('Standard');
      expect(await ranSteps(back.runId)).to.include.members(['chunk', 'chunk', 'embed', 'embed']);
      expect(await chunks()).to.deep.equal(large);
      expect(await run('Standard')).to.include({ docsTotal: 0 });

      // and so does 'chunk_small' in its turn
      await swap('chunk_small', 'chunk');
      const again = await run('Standard');
      expect(await ranSteps(again.runId)).to.include.members(['chunk_small', 'chunk_small']);
      expect((await chunks()).longest).to.be.at.most(300);
    });

    it('runs a renamed step again when it gets its old name and config back', async () => {
      await run('Standard');
      const large = await chunks();
      expect(large.longest).to.be.greaterThan(300);

      await db().run(
        `UPDATE pipeline_steps SET name = 'chunker', config = '{"max_chars": 300}' WHERE name = 'chunk' AND pipeline_id = ${standard}`,
      );
      await run('Standard');
      expect((await chunks()).longest).to.be.at.most(300);

      await db().run(
        `UPDATE pipeline_steps SET name = 'chunk', config = NULL WHERE name = 'chunker' AND pipeline_id = ${standard}`,
      );
      const back = await run('Standard');
      expect(await ranSteps(back.runId)).to.include.members(['chunk', 'chunk']);
      expect(await chunks()).to.deep.equal(large);
      expect(await run('Standard')).to.include({ docsTotal: 0 });
    });

    it('keeps the checkpoints of planned steps that write the same kind of data, drops the unplanned one', async () => {
      // entity_extract and analyze both write entities (without an LLM they end skipped, with a checkpoint)
      const id = await insertPipeline(db(), 'Entitaeten', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract' },
        { name: 'chunk', type: 'chunk' },
        { name: 'entities', type: 'entity_extract' },
        { name: 'analyze', type: 'analyze' },
        { name: 'entities_b', type: 'entity_extract' },
      ]);
      const checkpointNames = async () =>
        (
          await db().query<{ step_name: string }>(
            'SELECT DISTINCT step_name FROM step_checkpoints WHERE pipeline_id = ? ORDER BY step_name',
            [id],
          )
        ).map((r) => r.step_name);
      expect(await run('Entitaeten')).to.include({ docsDone: 2 });
      expect(await run('Entitaeten')).to.include({ docsTotal: 0 });

      await db().run(`UPDATE pipeline_steps SET enabled = 0 WHERE pipeline_id = ? AND name = 'entities_b'`, [
        id,
      ]);
      await db().run(
        `UPDATE pipeline_steps SET config = '{"max_entities_per_chunk": 5}' WHERE pipeline_id = ? AND name = 'entities'`,
        [id],
      );
      expect(await run('Entitaeten')).to.include({ docsDone: 2 }); // 'entities' runs again
      expect(await checkpointNames()).to.deep.equal(['analyze', 'chunk', 'entities', 'extract']);
      expect(await run('Entitaeten')).to.include({ docsTotal: 0 });
    });
  });
}
