import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread running the module at `moduleUrl` from the same module tree as the caller: the compiled
 * JavaScript in dist/, or the TypeScript sources under tsx (tests, scripts). Node 20 does not hand the parent's
 * ESM loader hooks to worker threads, so a TypeScript worker registers tsx's CommonJS hook itself and requires its
 * entry through it. The parent's flags (tsx, inspector) are not passed on.
 */
export function spawnModuleWorker(moduleUrl: URL, options: WorkerOptions = {}): Worker {
  const base: WorkerOptions = { execArgv: [], ...options };
  if (!moduleUrl.pathname.endsWith('.ts')) return new Worker(moduleUrl, base);
  // createRequire, not import.meta.resolve: under mocha/tsx this module may run as CommonJS
  const tsx = createRequire(import.meta.url).resolve('tsx/cjs/api');
  const entry = fileURLToPath(moduleUrl);
  return new Worker(`require(${JSON.stringify(tsx)}).register(); require(${JSON.stringify(entry)});`, {
    ...base,
    eval: true,
  });
}

/** The URL of a sibling module of `importMetaUrl`, with the caller's own extension (.ts under tsx, else .js). */
export function siblingModuleUrl(name: string, importMetaUrl: string): URL {
  return new URL(`./${name}${importMetaUrl.endsWith('.ts') ? '.ts' : '.js'}`, importMetaUrl);
}
