import { expect } from 'chai';
import { seedDatabase } from '../../../src/db/seed.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';

for (const backend of testBackends()) {
  describe(`seeding (${backend})`, () => {
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => setup?.cleanup());

    it('changes nothing when seeded again, and adds no second default pipeline after a rename', async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        expect((await seedDatabase(db)).inserted).to.equal(0);
        await db.run("UPDATE pipeline_configs SET name = 'MeinStandard' WHERE name = 'Standard'");
        await seedDatabase(db);
        const defaults = await db.query<{ name: string }>(
          'SELECT name FROM pipeline_configs WHERE is_default = 1 ORDER BY id',
        );
        expect(defaults.map((d) => d.name)).to.deep.equal(['MeinStandard']);
        expect((await planPipeline(db, engine.registry)).pipeline.name).to.equal('MeinStandard');
      } finally {
        await engine.close();
      }
    });

    it("leaves a seeded pipeline's steps as edited: a deleted or renamed step does not come back", async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        const stepsOf = async (pipeline: string) =>
          (
            await db.query<{ name: string }>(
              'SELECT s.name FROM pipeline_steps s JOIN pipeline_configs p ON p.id = s.pipeline_id WHERE p.name = ? ORDER BY s.sort_order, s.name',
              [pipeline],
            )
          ).map((s) => s.name);
        const seeded = await stepsOf('Schulungsunterlagen');
        expect(seeded).to.have.length(20);
        await db.run(
          "DELETE FROM pipeline_steps WHERE name = 'analyze' AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'Standard')",
        );
        await db.run(
          "UPDATE pipeline_steps SET name = 'zerlegen' WHERE name = 'chunk' AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'Standard')",
        );
        await db.run(
          "DELETE FROM pipeline_steps WHERE pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'Schulungsunterlagen')",
        );
        await seedDatabase(db);
        expect(await stepsOf('Standard')).to.deep.equal(['detect', 'extract', 'zerlegen', 'embed']);
        // a pipeline left without any step gets its seeded steps again, in their order
        expect(await stepsOf('Schulungsunterlagen')).to.deep.equal(seeded);
        expect((await seedDatabase(db)).inserted).to.equal(0);
      } finally {
        await engine.close();
      }
    });
  });
}
