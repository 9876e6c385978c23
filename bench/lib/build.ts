/**
 * The ingestion benches measure the compiled package (dist/), as users run it. This makes sure dist/ is not
 * older than the sources: when a source file is newer than its compiled file, `npm run build`'s two parts run first:
 * `tsc -p tsconfig.build.json` (its type errors, if any, are printed but do not stop the bench: tsc still emits)
 * and scripts/build-validators.ts (the generated validators of cpe's own schemas).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from './child.js';

function staleSources(): string[] {
  const stale: string[] = [];
  for (const top of ['src', 'steps']) {
    for (const entry of readdirSync(path.join(projectRoot, top), { withFileTypes: true, recursive: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) continue;
      const source = path.join(entry.parentPath, entry.name);
      const compiled = path
        .join(projectRoot, 'dist', path.relative(projectRoot, source))
        .replace(/\.ts$/, '.js');
      if (!existsSync(compiled) || statSync(compiled).mtimeMs < statSync(source).mtimeMs) stale.push(source);
    }
  }
  return stale;
}

export function ensureBuilt(log: (line: string) => void): void {
  const stale = staleSources();
  if (stale.length === 0) return;
  log(`dist/ is older than ${stale.length} source file(s): building (npm run build)`);
  const result = spawnSync(
    process.execPath,
    [path.join(projectRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: projectRoot,
      encoding: 'utf8',
    },
  );
  if (result.status !== 0)
    log(
      `tsc reported problems (dist/ was still written):\n${(result.stdout + result.stderr).slice(0, 2000)}`,
    );
  const validators = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(projectRoot, 'scripts/build-validators.ts')],
    { cwd: projectRoot, encoding: 'utf8' },
  );
  if (validators.status !== 0)
    throw new Error(
      `scripts/build-validators.ts failed:\n${(validators.stdout + validators.stderr).slice(0, 2000)}`,
    );
  if (!existsSync(path.join(projectRoot, 'dist/src/index.js')))
    throw new Error('dist/src/index.js missing after the build');
}
