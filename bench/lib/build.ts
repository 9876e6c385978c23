/**
 * The ingestion benches measure the compiled package (dist/), as users run it. This makes sure dist/ is not
 * older than the sources: when a source file is newer than its compiled file, `npm run build`'s two parts run first:
 * `tsc -p tsconfig.build.json` (its type errors, if any, are printed but do not stop the bench: tsc still emits)
 * and scripts/build-validators.ts (the generated validators of cpe's own schemas). compileChildren() compiles the
 * bench's own child modules the same way, so that the measured children run without a TypeScript loader.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { COMPILED_CHILDREN, projectRoot, useCompiledChildren } from './child.js';

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

/** `tsc -p <project>`; its type errors are printed, not fatal (tsc still emits: the caller checks the output). */
function tsc(project: string, log: (line: string) => void): void {
  const result = spawnSync(
    process.execPath,
    [path.join(projectRoot, 'node_modules/typescript/bin/tsc'), '-p', project],
    { cwd: projectRoot, encoding: 'utf8' },
  );
  if (result.status !== 0)
    log(
      `tsc -p ${project} reported problems (its output was still written):\n${(result.stdout + result.stderr).slice(0, 2000)}`,
    );
}

export function ensureBuilt(log: (line: string) => void): void {
  const stale = staleSources();
  if (stale.length === 0) return;
  log(`dist/ is older than ${stale.length} source file(s): building (npm run build)`);
  tsc('tsconfig.build.json', log);
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

/**
 * Compiles what the bench's children load (tsconfig.bench.json, into node_modules/.cache/cpe-bench), and has
 * runInChild start them from there, as plain JavaScript.
 */
export function compileChildren(log: (line: string) => void): void {
  tsc('tsconfig.bench.json', log);
  if (!existsSync(path.join(COMPILED_CHILDREN, 'bench/lib/child-main.js')))
    throw new Error(`tsc -p tsconfig.bench.json wrote no ${path.relative(projectRoot, COMPILED_CHILDREN)}`);
  useCompiledChildren();
}
