import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { projectRoot } from './office-fixtures.js';

describe('extract: damaged documents (npm run fuzz:extract)', () => {
  it('reads every damaged DOCX, PPTX and Markdown of a fixed seed or fails it with a cpe error in words', function () {
    // seed 7 over the corpus damages a package mammoth stops on with all its parts well-formed (a footnotes part in
    // a foreign namespace), which only the last try without notes reads
    this.timeout(120_000);
    const out = mkdtempSync(path.join(os.tmpdir(), 'cpe-fuzz-'));
    try {
      const script = path.join(projectRoot, 'scripts/fuzz-extract.ts');
      const run = spawnSync(
        process.execPath,
        ['--import', 'tsx', script, '--rounds', '500', '--seed', '7', '--out', out],
        { cwd: projectRoot, encoding: 'utf8' },
      );
      expect(run.stdout, run.stderr).to.contain('500 rounds over');
      // the documents the run read, and no finding: no error that is not a cpe one, none in a library's words
      expect(run.stdout).to.match(/\bdocx {2}read\b/);
      expect(run.stdout).to.not.contain('finding');
      expect(run.status).to.equal(0);
      expect(readdirSync(out)).to.deep.equal([]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
