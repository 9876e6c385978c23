import path from 'node:path';
import { expect } from 'chai';
import { type Engine, openEngine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { loadPluginRegistry, schemaProblems } from '../../../src/engine/registry.js';
import { ConfigError } from '../../../src/errors.js';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { insertPipeline } from '../../helpers/pipelines.js';

const fixtures = path.resolve(import.meta.dirname, '../../fixtures');

async function planError(engine: Engine, name: string): Promise<string[]> {
  try {
    await planPipeline(engine.dbs.content.sql, engine.registry, name);
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return (error as ConfigError).details.problems as string[];
  }
  throw new Error(`pipeline ${name} planned without error`);
}

for (const backend of testBackends()) {
  describe(`planning pipelines from SQL rows (${backend})`, () => {
    let setup: TestSetup;
    let engine: Engine;
    before(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      engine = await setup.open();
    });
    after(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    it('seeds Standard (default, 5 steps) and Schulungsunterlagen (20 steps, a DAG that branches after chunk)', async () => {
      const standard = await planPipeline(engine.dbs.content.sql, engine.registry);
      expect(standard.pipeline.name).to.equal('Standard');
      expect(standard.steps.map((s) => s.type)).to.deep.equal([
        'detect',
        'extract',
        'chunk',
        'embed',
        'analyze',
      ]);
      const training = await planPipeline(engine.dbs.content.sql, engine.registry, 'Schulungsunterlagen');
      expect(training.steps).to.have.length(20);
      const afterChunk = training.steps.filter((s) => s.dependsOn.includes('chunk')).map((s) => s.name);
      expect(afterChunk).to.include.members([
        'embed',
        'entity_extract',
        'semantic_analyze',
        'summarize',
        'question_generate',
      ]);
      expect(training.byName.get('finalize')!.dependsOn.length).to.be.greaterThan(3);
      expect(training.byName.get('collection_setup')!.phase).to.equal('pre');
      expect(training.byName.get('index_optimize')!.phase).to.equal('post');
    });

    it('plans a pipeline of custom plugins inserted with plain SQL, defaults filled and frozen', async () => {
      await insertPipeline(engine.dbs.content.sql, 'custom', [
        { name: 'double', type: 'double' },
        { name: 'nap', type: 'sleep', config: { ms: 1 } },
      ]);
      const plan = await planPipeline(engine.dbs.content.sql, engine.registry, 'custom');
      expect(plan.steps.map((s) => [s.name, s.dependsOn])).to.deep.equal([
        ['double', []],
        ['nap', ['double']],
      ]);
      expect(plan.byName.get('double')!.config).to.deep.equal({ value: 21 });
      expect(Object.isFrozen(plan.byName.get('double')!.config)).to.equal(true);
      expect(plan.versionHash).to.match(/^[0-9a-f]{16}$/);
    });

    it('reports every bad SQL edit at once, each naming its row', async () => {
      const db = engine.dbs.content.sql;
      const id = await insertPipeline(db, 'broken', [
        { name: 'a', type: 'double' },
        { name: 'b', type: 'no_such_type' },
        { name: 'c', type: 'double', config: '{"value": 1,' },
        { name: 'd', type: 'double', config: { value: -1 } },
        { name: 'e', type: 'double', dependsOn: ['nope'] },
        { name: 'a', type: 'sleep' },
        { name: 'f', type: 'double', config: { valu: 2 } },
      ]);
      const rows = await db.query<{ id: number; name: string }>(
        'SELECT id, name FROM pipeline_steps WHERE pipeline_id = ? ORDER BY id',
        [id],
      );
      const rowId = (name: string, nth = 0) => Number(rows.filter((r) => r.name === name)[nth]!.id);
      const problems = await planError(engine, 'broken');
      expect(problems).to.include.members([
        `pipeline_steps id=${rowId('b')} 'b': unknown step type 'no_such_type' (known types: ${engine.registry
          .all()
          .map((r) => r.plugin.type)
          .join(
            ', ',
          )}; a step of your own is found in a folder that CPE_PLUGIN_DIRS or the config file's "plugins" names)`,
        `pipeline_steps id=${rowId('d')} 'd': config.value must be >= 0`,
        `pipeline_steps id=${rowId('e')} 'e': depends_on names unknown step 'nope'`,
        `pipeline_steps id=${rowId('a', 1)} 'a': duplicate step name 'a' (also pipeline_steps id=${rowId('a')})`,
        `pipeline_steps id=${rowId('f')} 'f': config has unknown key 'valu'`,
      ]);
      expect(
        problems.find((p) => p.startsWith(`pipeline_steps id=${rowId('c')} 'c': config is not valid JSON`)),
      ).to.be.a('string');
    });

    it('plans a depends_on entry written in another Unicode normalization (NFD) than the step name', async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'normalized', [
        { name: 'Prüfung'.normalize('NFC'), type: 'double' },
        { name: 'nap', type: 'sleep', config: { ms: 1 }, dependsOn: ['Prüfung'.normalize('NFD')] },
      ]);
      const plan = await planPipeline(db, engine.registry, 'normalized');
      expect(plan.byName.get('nap')!.dependsOn).to.deep.equal(['Prüfung'.normalize('NFC')]);
    });

    it("refuses an enabled flag that is not 0 or 1 ('true' by SQL read as off before)", async () => {
      const db = engine.dbs.content.sql;
      const pipelineId = await insertPipeline(db, 'flags', [
        { name: 'a', type: 'double' },
        { name: 'b', type: 'double' },
      ]);
      // SQLite keeps the text as written; MariaDB's TINYINT takes only numbers
      const [value, shown] = db.dialect === 'sqlite' ? ["'true'", '"true"'] : ['2', '2'];
      await db.run(`UPDATE pipeline_steps SET enabled = ${value} WHERE pipeline_id = ? AND name = 'b'`, [
        pipelineId,
      ]);
      const [row] = await db.query<{ id: number }>(
        "SELECT id FROM pipeline_steps WHERE pipeline_id = ? AND name = 'b'",
        [pipelineId],
      );
      expect(await planError(engine, 'flags')).to.include(
        `pipeline_steps id=${Number(row!.id)} 'b': enabled must be 0 or 1 (is ${shown})`,
      );
    });

    it('refuses Standard with embed moved before chunk by a sort_order edit (it would embed nothing)', async () => {
      const db = engine.dbs.content.sql;
      await db.run(
        `UPDATE pipeline_steps SET sort_order = 25 WHERE name = 'embed'
           AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'Standard')`,
      );
      const [embed, chunk] = await Promise.all(
        ['embed', 'chunk'].map(async (name) => {
          const [r] = await db.query<{ id: number }>(
            `SELECT s.id FROM pipeline_steps s JOIN pipeline_configs c ON c.id = s.pipeline_id
             WHERE c.name = 'Standard' AND s.name = ?`,
            [name],
          );
          return Number(r!.id);
        }),
      );
      expect(await planError(engine, 'Standard')).to.deep.equal([
        `pipeline_steps id=${embed} 'embed': reads chunks, which 'chunk' (pipeline_steps id=${chunk}) writes, but does not run after it: give it a sort_order above 30, or set its depends_on to ["chunk"]`,
      ]);
    });

    it('refuses a cycle and names it', async () => {
      await insertPipeline(engine.dbs.content.sql, 'cyclic', [
        { name: 'x', type: 'double', dependsOn: ['z'] },
        { name: 'y', type: 'double', dependsOn: ['x'] },
        { name: 'z', type: 'double', dependsOn: ['y'] },
      ]);
      const problems = await planError(engine, 'cyclic');
      expect(problems).to.have.length(1);
      expect(problems[0]).to.match(
        /^pipeline 'cyclic': steps form a cycle: (x|y|z) -> (x|y|z) -> (x|y|z) -> (x|y|z) \(pipeline_steps id=\d+, id=\d+, id=\d+\)$/,
      );
    });

    it('refuses step names that MariaDB takes for the same name, and a sort_order that is not a number', async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'namen', [
        { name: 'wörter', type: 'double' },
        { name: 'Worter', type: 'double' },
        { name: 'zahl', type: 'double' },
      ]);
      const [zahl] = await db.query<{ id: number }>("SELECT id FROM pipeline_steps WHERE name = 'zahl'");
      await db
        .run("UPDATE pipeline_steps SET sort_order = 'zehn' WHERE name = 'zahl'")
        .catch(() => undefined);
      const problems = await planError(engine, 'namen');
      expect(
        problems.some((p) =>
          /'Worter' differs from 'wörter' \(pipeline_steps id=\d+\) only in case, accents or trailing spaces/.test(
            p,
          ),
        ),
      ).to.equal(true);
      // MariaDB refuses the text in an INT column already; SQLite keeps it, and planning names it
      if (db.dialect === 'sqlite')
        expect(problems).to.include(
          `pipeline_steps id=${zahl!.id} 'zahl': sort_order must be a whole number (is "zehn")`,
        );
    });

    it('finds a pipeline by its exact name on every backend', async () => {
      const error = await planPipeline(engine.dbs.content.sql, engine.registry, 'schulungsunterlagen ').catch(
        (e: unknown) => e as Error,
      );
      expect((error as Error).message).to.match(
        /^pipeline 'schulungsunterlagen ' not found \(names are exact: did you mean 'Schulungsunterlagen'\?\); known pipelines: /,
      );
    });

    it('names an unknown pipeline and lists the known ones', async () => {
      try {
        await planPipeline(engine.dbs.content.sql, engine.registry, 'Nope');
        expect.fail('planned');
      } catch (error) {
        expect((error as Error).message).to.match(
          /pipeline 'Nope' not found; known pipelines: .*Schulungsunterlagen.*Standard/,
        );
      }
    });

    it('changes the version hash, and only the lineage of the changed step and its dependants, on a config edit', async () => {
      const db = engine.dbs.content.sql;
      const id = await insertPipeline(db, 'lineage', [
        { name: 'one', type: 'double' },
        { name: 'two', type: 'double' },
        { name: 'side', type: 'double', dependsOn: ['one'] },
      ]);
      const before = await planPipeline(db, engine.registry, 'lineage');
      await db.run(
        `UPDATE pipeline_steps SET config = '{"value": 5}' WHERE pipeline_id = ? AND name = 'two'`,
        [id],
      );
      const after = await planPipeline(db, engine.registry, 'lineage');
      expect(after.versionHash).to.not.equal(before.versionHash);
      expect(after.byName.get('one')!.lineageHash).to.equal(before.byName.get('one')!.lineageHash);
      expect(after.byName.get('side')!.lineageHash).to.equal(before.byName.get('side')!.lineageHash);
      expect(after.byName.get('two')!.lineageHash).to.not.equal(before.byName.get('two')!.lineageHash);
    });
  });
}

describe('plugin registry', () => {
  it('names a module that breaks the contract', async () => {
    const registry = await loadPluginRegistry([path.join(fixtures, 'bad-plugins')]);
    expect(registry.problems).to.have.length(1);
    expect(registry.problems[0]).to.contain(path.join(fixtures, 'bad-plugins', 'bad_export.ts'));
    expect(registry.problems[0]).to.contain("scope must be 'document' or 'run'");
    expect(registry.problems[0]).to.contain('run must be a function');
    expect(registry.problems[0]).to.contain(
      "reads must be an array of names of kinds of data, e.g. ['chunks']",
    );
    expect(registry.get('bad_export')).to.equal(undefined);
  });

  it('does not let a custom plugin silently replace a built-in type', async () => {
    const registry = await loadPluginRegistry([path.join(fixtures, 'shadow-plugins')]);
    expect(registry.get('detect')!.source).to.equal('builtin');
    expect(registry.problems[0]).to.match(
      /my_detect\.ts: type 'detect' is a built-in step type; a custom plugin may not replace it/,
    );
  });

  it('compiles config schemas when they are needed: a broken one is named by schemaProblems, not by loading', async () => {
    const folder = path.join(fixtures, 'bad-schema-plugins');
    // the same folder twice (with a trailing slash): read once, no clash of its types with themselves
    const registry = await loadPluginRegistry([folder, `${folder}/`]);
    expect(registry.problems).to.deep.equal([]);
    expect(registry.get('bad_schema')!.source).to.equal(path.join(folder, 'bad_schema.ts'));
    const problems = schemaProblems(registry);
    expect(problems).to.have.length(1);
    expect(problems[0]).to.contain(path.join(folder, 'bad_schema.ts'));
    expect(problems[0]).to.contain('configSchema does not compile');
    expect(problems[0]).to.contain('#/definitions/missing');
  });

  it('is not loaded for an engine opened without step plugins, which says so when the registry is used', async () => {
    const setup = createTestSetup('sqlite');
    const engine = await openEngine({ flags: setup.flags, cwd: setup.dataDir, stepPlugins: false });
    try {
      expect(() => engine.registry.get('detect')).to.throw(/opened without its step plugins/);
      expect(() => engine.registry.problems).to.throw(/opened without its step plugins/);
      await engine.dbs.content.sql.query('SELECT 1 AS one'); // the rest of the engine works
    } finally {
      await engine.close();
      await setup.cleanup();
    }
  });

  it('loads built-ins from steps/ with type = basename, and fixture plugins with their file as source', async () => {
    const registry = await loadPluginRegistry([fixturePlugins]);
    expect(registry.problems).to.deep.equal([]);
    expect(schemaProblems(registry)).to.deep.equal([]); // every built-in and fixture schema compiles
    expect(registry.get('detect')!.source).to.equal('builtin');
    expect(registry.get('double')!.source).to.equal(path.join(fixturePlugins, 'double.ts'));
  });
});
