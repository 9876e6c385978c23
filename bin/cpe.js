#!/usr/bin/env node
// Runs the compiled CLI from dist/ (built by `npm ci` through the prepare script); falls back to the
// TypeScript sources through tsx when dist/ is missing, e.g. in a checkout where nobody built yet.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(fileURLToPath(compiled))) {
  const { main } = await import(compiled.href);
  await main();
} else {
  const { register } = await import('tsx/esm/api');
  register();
  const { main } = await import(new URL('../src/cli/main.ts', import.meta.url).href);
  await main();
}
