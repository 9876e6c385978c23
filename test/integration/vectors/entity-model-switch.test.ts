import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';
import { type AnthropicTestServer, startAnthropicServer } from '../../servers/anthropic-server.js';
import { OllamaTestServer } from '../../servers/ollama-server.js';
import { QdrantTestServer } from '../../servers/qdrant-server.js';

const FILES: Record<string, string> = {
  'vertrag.md':
    '# Ausbildungsvertrag\n\nDer Ausbildungsvertrag wird vor Beginn der Berufsausbildung geschlossen. Die Kammer ' +
    'prüft den Ausbildungsvertrag.\n',
  'tarif.md':
    '# Tarif\n\nDie Gewerkschaft verhandelt mit dem Arbeitgeberverband über den Tarifvertrag. Der Betriebsrat ' +
    'informiert die Belegschaft.\n',
  'bericht.md':
    '# Berichtsheft\n\nDer Ausbilder vermittelt die Fertigkeiten. Das Berichtsheft dokumentiert den Fortschritt der ' +
    'Auszubildenden.\n',
};

/**
 * The documented move to another embedding model (README: the refusal says how), on a data set whose entities
 * (the Standard pipeline's analyze step, with an LLM) were embedded with the old one: the chunks move to a new
 * collection, the `entities` collection keeps its name and has to be rebuilt, and until it is, `cpe verify` says so.
 */
for (const backend of testBackends()) {
  for (const kind of ['embedded', 'qdrant'] as const) {
    describe(`switching the embedding model with entities (${kind} index, ${backend})`, function () {
      this.timeout(300000);
      let setup: TestSetup;
      let anthropic: AnthropicTestServer;
      let ollama: OllamaTestServer;
      let qdrant: QdrantTestServer | undefined;
      let source: string;
      const engines: Engine[] = [];

      beforeEach(async () => {
        anthropic = await startAnthropicServer();
        ollama = new OllamaTestServer();
        const ollamaUrl = (await ollama.start()).url;
        setup = createTestSetup(backend);
        Object.assign(setup.env, {
          ANTHROPIC_API_KEY: 'sk-ant-test-not-a-secret',
          CPE_ANTHROPIC_BASE_URL: anthropic.url,
          CPE_OLLAMA_HOST: ollamaUrl,
          CPE_EMBED_MODEL: 'mxbai-embed-large',
        });
        if (kind === 'qdrant') {
          qdrant = new QdrantTestServer();
          setup.env.CPE_QDRANT_URL = (await qdrant.start()).url;
        } else {
          delete setup.env.CPE_QDRANT_URL;
        }
        source = mkdtempSync(path.join(os.tmpdir(), 'cpe-entity-model-'));
      });
      afterEach(async () => {
        for (const engine of engines.splice(0)) await engine.close();
        await anthropic?.close();
        await ollama?.close();
        await qdrant?.close();
        qdrant = undefined;
        await setup?.cleanup();
        rmSync(source, { recursive: true, force: true });
      });

      /**
       * Adds the file and runs the default pipeline (Standard) over the folder, as `cpe run` does: in a cpe opened
       * anew (the previous one closed), which reads the configuration of now.
       */
      async function run(file: string) {
        writeFileSync(path.join(source, file), FILES[file]!);
        for (const open of engines.splice(0)) await open.close();
        const engine = await setup.open();
        engines.push(engine);
        const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'Standard');
        const summary = await runPipeline(engine, { plan, sourceDir: source, concurrency: 1 });
        expect(summary.failures, file).to.deep.equal([]);
        const warnings = await engine.dbs.log.sql.query<{ message: string }>(
          "SELECT message FROM pipeline_log WHERE run_id = ? AND level = 'warn' ORDER BY id",
          [summary.runId],
        );
        return { engine, db: engine.dbs.content.sql, warnings: warnings.map((w) => w.message) };
      }

      const entityCounts = async (db: Engine['dbs']['content']['sql']) => {
        const [row] = await db.query<{ all: number; unpointed: number }>(
          'SELECT COUNT(*) AS "all", SUM(CASE WHEN qdrant_id IS NULL THEN 1 ELSE 0 END) AS unpointed FROM entities',
        );
        return { all: Number(row!.all), unpointed: Number(row!.unpointed ?? 0) };
      };

      it('verify reports the entities the new model left without a point and the old collection; rebuilt as it says, --repair embeds every entity again', async () => {
        const first = await run('vertrag.md');
        const before = await entityCounts(first.db);
        expect(before.all, 'the analyze step made entities').to.be.greaterThan(0);
        expect(before.unpointed).to.equal(0);
        const ok = await runCli(['verify'], setup.env);
        expect(ok.code, ok.stdout + ok.stderr).to.equal(0);

        // the switch, as cpe's refusal says: a new model, and a new collection for the embed step's chunks
        setup.env.CPE_EMBED_MODEL = 'custom-embed';
        const refused = await runCli(['verify'], setup.env);
        // a configuration error, as for search (README's exit codes), not a difference --repair could mend
        expect(refused.code, refused.stdout + refused.stderr).to.equal(2);
        const searched = await runCli(['search', 'Tarif'], setup.env);
        expect(searched.code, searched.stdout + searched.stderr).to.equal(2);
        expect(refused.stdout).to.contain(
          "set config.collection to 'documents_custom_embed' on the embed step",
        );
        await first.db.run(
          `UPDATE pipeline_steps SET config = '{"collection": "documents_custom_embed"}'
            WHERE step_type = 'embed' AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'Standard')`,
        );
        const second = await run('tarif.md');
        const { db } = second;
        const vectors = await second.engine.providers.vectors();
        expect(await vectors.count('documents_custom_embed'), 'both documents re-embedded').to.equal(2);
        const after = await entityCounts(db);
        expect(after.all).to.be.greaterThan(before.all);
        expect(after.unpointed, 'the new entities got no point').to.equal(after.all - before.all);

        // the run's warning gives advice that can be followed: the entities collection keeps its name
        const warning = second.warnings.find((w) => w.startsWith('entities not embedded'));
        expect(warning, second.warnings.join('\n')).to.be.a('string');
        expect(warning)
          .to.contain(`collection 'entities' (${kind}) was built with mxbai-embed-large`)
          .and.contain('entities are now embedded with custom-embed')
          .and.contain('cpe verify --repair')
          .and.not.contain('config.collection')
          .and.not.contain('entities_custom_embed');

        // cpe verify (the configured collection, documents_custom_embed) checks the entities too
        const verify = await runCli(['verify'], setup.env);
        expect(verify.code, verify.stdout + verify.stderr).to.equal(1);
        expect(verify.stdout)
          .to.contain("collection 'documents_custom_embed'")
          .and.contain(`entities without a point: ${after.unpointed}`)
          .and.contain(`collection 'entities' (${kind}) was built with mxbai-embed-large`)
          .and.contain('NOT OK');
        // --repair cannot store them into a collection of the old model: it says so again, and stores nothing
        const cannot = await runCli(['verify', '--repair', '--json'], setup.env);
        expect(cannot.code, cannot.stdout + cannot.stderr).to.equal(1);
        const report = JSON.parse(cannot.stdout);
        expect(report.entityMismatch).to.contain('was built with mxbai-embed-large');
        expect(report.repaired.entitiesStored).to.equal(0);
        expect((await entityCounts(db)).unpointed).to.equal(after.unpointed);

        // rebuilt exactly as the advice says
        const advice = report.entityMismatch as string;
        if (kind === 'qdrant') {
          const url = /curl -X DELETE (\S+)/.exec(advice)?.[1];
          expect(url, advice).to.equal(`${setup.env.CPE_QDRANT_URL}/collections/entities`);
          expect((await fetch(url!, { method: 'DELETE' })).ok).to.equal(true);
        } else {
          const statements = advice.match(/DELETE FROM [^;]+;/g) ?? [];
          expect(statements, advice).to.have.length(2);
          for (const statement of statements) await db.run(statement.slice(0, -1));
        }
        const repaired = await runCli(['verify', '--repair'], setup.env);
        expect(repaired.code, repaired.stdout + repaired.stderr).to.equal(0);
        expect(repaired.stdout).to.contain(`${after.all} entity points stored`);
        expect(await entityCounts(db)).to.deep.equal({ all: after.all, unpointed: 0 });
        const entities = await vectors.describeCollection('entities');
        expect(entities).to.include({ exists: true, model: 'custom-embed', points: after.all });
        const agreed = await runCli(['verify'], setup.env);
        expect(agreed.code, agreed.stdout + agreed.stderr).to.equal(0);
        expect(agreed.stdout).to.contain('OK: SQL and the vector index agree.');

        // and the entities of the next run get their points again
        const third = await run('bericht.md');
        expect(third.warnings.filter((w) => w.startsWith('entities not embedded'))).to.deep.equal([]);
        const last = await entityCounts(third.db);
        expect(last.all).to.be.greaterThan(after.all);
        expect(last.unpointed).to.equal(0);
      });

      it('verify --collection of another collection says the entities were not checked', async () => {
        const first = await run('vertrag.md');
        const vectors = await first.engine.providers.vectors();
        const embedder = await first.engine.providers.embedder();
        await vectors.ensureCollection('leer', {
          size: embedder.dimensions,
          distance: 'Cosine',
          model: embedder.model,
        });
        // an entity whose point is gone: the default verify finds it, the one of another collection does not look
        await first.db.run('UPDATE entities SET qdrant_id = NULL WHERE id = (SELECT MIN(id) FROM entities)');
        const other = await runCli(['verify', '--collection=leer'], setup.env);
        expect(other.code, other.stdout + other.stderr).to.equal(0);
        expect(other.stdout).to.contain(
          "entities not checked: the 'entities' collection is checked along with 'documents'",
        );
        // before the verdict, which is the last line
        expect(other.stdout.trim().split('\n').at(-1)).to.equal('OK: SQL and the vector index agree.');
        const configured = await runCli(['verify', '--collection=documents'], setup.env);
        expect(configured.code).to.equal(1);
        expect(configured.stdout).to.contain('entities without a point: 1').and.not.contain('not checked');
      });
    });
  }
}
