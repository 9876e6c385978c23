import { cpSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { parseJsonColumn } from '../../../src/util/json.js';
import { createTestSetup, testBackends } from '../../helpers/backends.js';
import { projectRoot } from '../../helpers/cli.js';

const examplePlugins = path.join(projectRoot, 'examples/plugins');

for (const backend of testBackends()) {
  describe(`the example plugin glossary_tags, put into Standard with the README's SQL (${backend})`, function () {
    this.timeout(300000);

    it('tags each document with the glossary terms its chunks mention', async () => {
      const setup = createTestSetup(backend, { plugins: [examplePlugins] });
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        expect(engine.registry.get('glossary_tags')!.source).to.equal(
          path.join(examplePlugins, 'glossary_tags.js'),
        );
        // the statement from README.md, "Writing a custom step plugin"
        await db.run(`INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config)
SELECT id, 'glossary_tags', 'glossary_tags', 35, 1, '{"terms": {"Feedback": ["Feedback", "Rückmeldung"]}}'
FROM pipeline_configs WHERE name = 'Standard'`);
        const plan = await planPipeline(db, engine.registry, 'Standard');
        expect(plan.steps.map((s) => s.name)).to.deep.equal([
          'detect',
          'extract',
          'chunk',
          'glossary_tags',
          'embed',
          'analyze',
        ]);
        const source = mkdtempSync(path.join(os.tmpdir(), 'cpe-glossary-'));
        cpSync(path.join(projectRoot, 'examples/documents/handbuch'), source, { recursive: true });
        const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
        expect(summary.failures).to.deep.equal([]);
        const rows = await db.query<{ filename: string; metadata: string }>(
          'SELECT filename, metadata FROM documents ORDER BY filename',
        );
        const tags = Object.fromEntries(
          rows.map((r) => [r.filename, parseJsonColumn<Record<string, any>>(r.metadata, {}).glossary_tags]),
        );
        expect(tags['feedback.md']).to.have.property('Feedback').that.is.at.least(5);
        expect(tags['auftragsklaerung.md']).to.deep.equal({});
      } finally {
        await engine.close();
        await setup.cleanup();
      }
    });
  });
}
