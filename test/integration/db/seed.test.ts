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
  });
}
