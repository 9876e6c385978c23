import { cpSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { SqlExecutor } from '../../../src/db/sql.js';
import type { Engine } from '../../../src/engine/engine.js';
import { type Plan, planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { parseJsonColumn } from '../../../src/util/json.js';
import { createTestSetup, testBackends } from '../../helpers/backends.js';
import { projectRoot } from '../../helpers/cli.js';
import { interceptTransactions } from '../../helpers/sql.js';
import { tempDir } from '../../helpers/temp-dir.js';

const examplePlugins = path.join(projectRoot, 'examples/plugins');

type Around = Parameters<typeof interceptTransactions>[1];

/**
 * The race of two steps that run beside each other, made to happen for every document: the first read of a
 * document's metadata (`SELECT metadata FROM documents WHERE id = ?`, a step's, in a transaction or not) answers
 * only once a second step has read it too, or after 300 ms: a merge that locks the row makes the second wait for
 * the first's commit, and then it never reads beside it. Every statement of `db`, in transactions too, is watched.
 */
function holdFirstMetadataRead(db: SqlExecutor): void {
  const waiting = new Map<unknown, () => void>();
  const around: Around = async (sql, params, next) => {
    if (!/^SELECT metadata FROM documents WHERE id = \?/.test(sql)) return next();
    const id = params?.[0];
    const first = waiting.get(id);
    const result = await next();
    if (first) {
      first();
      return result;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (waiting.get(id) === done) waiting.delete(id);
        resolve();
      };
      const timer = setTimeout(done, 300);
      waiting.set(id, done);
    });
    return result;
  };
  const query = db.query.bind(db);
  db.query = <T>(sql: string, params?: readonly unknown[]) =>
    around(sql, params as unknown[] | undefined, () => query(sql, params)) as Promise<T[]>;
  interceptTransactions(db, around);
}

/** Runs `plan` over a copy of examples/documents/handbuch, no document failing: each document's metadata by file name. */
async function runHandbook(engine: Engine, plan: Plan): Promise<Record<string, Record<string, any>>> {
  const source = tempDir('cpe-glossary-');
  cpSync(path.join(projectRoot, 'examples/documents/handbuch'), source, { recursive: true });
  const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 2 });
  expect(summary.failures).to.deep.equal([]);
  const rows = await engine.dbs.content.sql.query<{ filename: string; metadata: string }>(
    'SELECT filename, metadata FROM documents ORDER BY filename',
  );
  return Object.fromEntries(
    rows.map((r) => [r.filename, parseJsonColumn<Record<string, any>>(r.metadata, {})]),
  );
}

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
        const metadata = await runHandbook(engine, plan);
        expect(metadata['feedback.md']!.glossary_tags).to.have.property('Feedback').that.is.at.least(5);
        expect(metadata['auftragsklaerung.md']!.glossary_tags).to.deep.equal({});
      } finally {
        await engine.close();
        await setup.cleanup();
      }
    });

    it('keeps its tags in Schulungsunterlagen, where it runs beside metadata_store, and metadata_store keeps its keys', async () => {
      const setup = createTestSetup(backend, { plugins: [examplePlugins] });
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        // after chunk, as the plugin's header says: depends_on null is the step before it (chunk), as metadata_store's
        await db.run(`INSERT INTO pipeline_steps (pipeline_id, name, step_type, sort_order, enabled, config)
SELECT id, 'glossary_tags', 'glossary_tags', 85, 1, '{"terms": {"Feedback": ["Feedback", "Rückmeldung"]}}'
FROM pipeline_configs WHERE name = 'Schulungsunterlagen'`);
        const plan = await planPipeline(db, engine.registry, 'Schulungsunterlagen');
        const dependsOn = (name: string) => plan.steps.find((s) => s.name === name)?.dependsOn;
        expect(dependsOn('glossary_tags')).to.deep.equal(['chunk']);
        expect(dependsOn('metadata_store')).to.deep.equal(['chunk']);
        holdFirstMetadataRead(db);
        const metadata = await runHandbook(engine, plan);
        expect(metadata['feedback.md']!.glossary_tags).to.have.property('Feedback').that.is.at.least(5);
        expect(metadata['auftragsklaerung.md']!.glossary_tags).to.deep.equal({});
        for (const kept of Object.values(metadata)) {
          expect(kept).to.include({ format: 'md' });
          expect(kept).to.have.property('words').that.is.above(0);
          expect(kept).to.have.property('counts');
        }
      } finally {
        await engine.close();
        await setup.cleanup();
      }
    });
  });
}
