import { expect } from 'chai';
import { commandLine } from '../../../src/util/command-line.js';

describe('util/command-line', () => {
  it("records cpe's own script as cpe, wherever npx or npm put it, and any other script as started", () => {
    const node = '/usr/bin/node';
    expect(
      commandLine([node, '/root/.npm/_npx/6d21b7c8/node_modules/.bin/cpe', 'run', '--source=docs']),
    ).to.equal('cpe run --source=docs');
    expect(commandLine([node, '/work/cpe/bin/cpe.js', 'status'])).to.equal('cpe status');
    expect(commandLine([node, 'C:\\tools\\cpe', 'runs'])).to.equal('cpe runs');
    expect(commandLine([node, '/work/cpe/src/cli/bin.ts', 'scan'])).to.equal('cpe scan');
    expect(commandLine([node, '/srv/ingest.mjs', '--fast'])).to.equal('/srv/ingest.mjs --fast');
    expect(commandLine([node, '/srv/tools/bin.js'])).to.equal('/srv/tools/bin.js');
    expect(commandLine([node, '/srv/mycpe.js'])).to.equal('/srv/mycpe.js');
  });
});
