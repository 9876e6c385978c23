import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadPluginRegistry, schemaProblems } from '../../../src/engine/registry.js';
import { runCli } from '../../helpers/cli.js';

/** A folder of plugin modules: file name -> source. */
function pluginFolder(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-plugins-'));
  for (const [name, source] of Object.entries(files)) writeFileSync(path.join(dir, name), source);
  return dir;
}

/** A plugin module exporting a step of `type` with the given configSchema (as source text). */
const plugin = (type: string, configSchema = '{ type: "object" }', before = '') =>
  `${before}\nexport default { type: '${type}', description: 'Wörter zählen', scope: 'document', configSchema: ${configSchema}, async run() {} };\n`;

describe('loading custom step plugins', function () {
  this.timeout(120000);
  const folders: string[] = [];
  const folder = (files: Record<string, string>) => {
    const dir = pluginFolder(files);
    folders.push(dir);
    return dir;
  };
  after(() => {
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });

  it('names a link to a file that is gone as a problem of that file; the other plugins of its folder load', async () => {
    const dir = folder({ 'woerter.mjs': plugin('woerter') });
    const gone = path.join(dir, 'alt.mjs');
    symlinkSync(path.join(dir, 'nicht-da.mjs'), gone);
    const registry = await loadPluginRegistry([dir]);
    expect(registry.get('woerter')?.file).to.equal(path.join(dir, 'woerter.mjs'));
    expect(registry.problems).to.deep.equal([
      `step plugin ${gone}: is a link to ${path.join(dir, 'nicht-da.mjs')}, which does not exist`,
    ]);
  });

  it("keeps the position and the reason of a .ts plugin's syntax error", async () => {
    const dir = folder({ 'kaputt.ts': 'const x: number = ;\nexport default {};\n' });
    const registry = await loadPluginRegistry([dir]);
    expect(registry.problems).to.have.length(1);
    expect(registry.problems[0]).to.equal(
      `step plugin ${path.join(dir, 'kaputt.ts')}: cannot be loaded: Transform failed with 1 error: ${path.join(dir, 'kaputt.ts')}:1:18: ERROR: Unexpected ";"`,
    );
  });

  it("says the line of a JavaScript plugin's syntax error, and of an error its top-level code throws", async () => {
    const dir = folder({
      'komma.mjs': "export default {\n  type: 'komma',\n  description: 'x'\n  configSchema: {},\n};\n",
      'wirft.mjs': 'const a = 1;\nundefinedFn(a);\nexport default {};\n',
    });
    const registry = await loadPluginRegistry([dir]);
    // the reason alone: "Unexpected identifier 'configSchema'", with no line to look at
    expect([...registry.problems].sort()).to.deep.equal([
      `step plugin ${path.join(dir, 'komma.mjs')}: cannot be loaded: Unexpected identifier 'configSchema' (at komma.mjs:4)`,
      `step plugin ${path.join(dir, 'wirft.mjs')}: cannot be loaded: undefinedFn is not defined (at wirft.mjs:2:1)`,
    ]);
  });

  it('names the file of a config schema whose $schema cpe does not know; one naming 2020-12 is fine', async () => {
    const dir = folder({
      'neu.mjs': plugin('neu', '{ $schema: "https://json-schema.org/draft/2020-12/schema", type: "object" }'),
      'alt.mjs': plugin('alt', '{ $schema: "http://json-schema.org/draft-04/schema#", type: "object" }'),
    });
    const registry = await loadPluginRegistry([dir]);
    expect(registry.problems).to.deep.equal([]);
    const problems = schemaProblems(registry);
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(
      new RegExp(
        `^step plugin ${path.join(dir, 'alt.mjs')}: configSchema is not valid JSON Schema: \\$schema "http://json-schema.org/draft-04/schema#" is not a JSON Schema version cpe knows`,
      ),
    );
  });

  it('cpe steps lists the problem of a property schema that is null, and the steps, as --json does (exit 2)', async () => {
    const dir = folder({
      'null_prop.mjs': plugin('null_prop', '{ type: "object", properties: { a: null } }'),
    });
    const data = path.join(dir, 'data');
    const cli = await runCli(['steps'], { PATH: process.env.PATH, CPE_DATA_DIR: data, CPE_PLUGIN_DIRS: dir });
    expect(cli.code, cli.stderr).to.equal(2);
    expect(cli.stdout).to.contain(`null_prop  (document, ${path.join(dir, 'null_prop.mjs')})\n`);
    expect(cli.stdout).to.contain('    a: schema null\n');
    expect(cli.stderr).to.contain(
      `cpe: step plugin ${path.join(dir, 'null_prop.mjs')}: configSchema is not valid JSON Schema: data/properties/a must be object,boolean`,
    );
  });

  it('names a plugin module whose top-level await never settles as a problem of its file, and goes on', async () => {
    const dir = folder({
      'haengt.mjs': plugin('haengt', undefined, 'await new Promise(() => {});'),
      'woerter.mjs': plugin('woerter'),
    });
    const data = path.join(dir, 'data');
    const cli = await runCli(
      ['steps'],
      { PATH: process.env.PATH, CPE_DATA_DIR: data, CPE_PLUGIN_DIRS: dir },
      undefined,
      60_000,
    );
    expect(cli.code, cli.stderr).to.equal(2);
    expect(cli.stdout).to.contain(`woerter  (document, ${path.join(dir, 'woerter.mjs')})`);
    expect(cli.stderr).to.equal(
      `cpe: step plugin ${path.join(dir, 'haengt.mjs')}: cannot be loaded: its module never finished loading: its top-level code awaits a promise that nothing left in the process can settle\n`,
    );
  });
});
