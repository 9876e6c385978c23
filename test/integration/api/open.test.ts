import { expect } from 'chai';
import { open } from '../../../src/index.js';
import { createTestSetup, fixturePlugins } from '../../helpers/backends.js';
import { generatedDocuments, makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

describe('the programmatic API', () => {
  it('opens cpe, plans and runs a pipeline, reports status and a document, closes', async () => {
    const setup = createTestSetup('sqlite', { plugins: [fixturePlugins] });
    const cpe = await open({ flags: setup.flags, env: setup.env, cwd: setup.dataDir });
    try {
      await insertPipeline(cpe.engine.dbs.content.sql, 'api', [
        { name: 'detect', type: 'detect' },
        { name: 'double', type: 'double' },
      ]);
      const plan = await cpe.plan('api');
      expect(plan.steps.map((s) => s.name)).to.deep.equal(['detect', 'double']);
      const events: string[] = [];
      const summary = await cpe.run({
        pipeline: 'api',
        source: makeSourceFolder(generatedDocuments(3)),
        onEvent: (e) => events.push(e.type),
      });
      expect(summary).to.include({ status: 'ok', docsDone: 3 });
      expect(events.filter((e) => e === 'document-finished')).to.have.length(3);
      const status = await cpe.status();
      expect(status.documents).to.deep.equal({ done: 3 });
      const doc = await cpe.document(1);
      expect(doc!.steps.map((s) => [s.step, s.status])).to.deep.equal([['double', 'ok']]);
    } finally {
      await cpe.close();
      await setup.cleanup();
    }
  });
});
