import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(start: string): string {
  let dir = start;
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'cpe') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cpe: package root not found above ${start}`);
    dir = parent;
  }
}

/** The cpe package folder (where package.json, seeds/, prompts/ live), from source or from dist/. */
export const packageRoot = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

/** true when running the compiled JavaScript in dist/, false under tsx from the TypeScript sources. */
export const runningFromDist = fileURLToPath(import.meta.url).endsWith('.js');

/** Folder of the built-in step plugins as loadable modules (steps/*.ts or dist/steps/*.js). */
export const builtinStepsDir = runningFromDist
  ? path.join(packageRoot, 'dist', 'steps')
  : path.join(packageRoot, 'steps');

/**
 * Where `npm run build` writes the generated validators of cpe's own JSON schemas (scripts/build-validators.ts);
 * undefined under tsx, where every schema is compiled when first used.
 */
export const generatedValidatorsDir = runningFromDist
  ? path.join(packageRoot, 'dist', 'validators')
  : undefined;

export const migrationsDir = path.join(packageRoot, 'src', 'db', 'migrations');
export const seedsDir = path.join(packageRoot, 'seeds');
