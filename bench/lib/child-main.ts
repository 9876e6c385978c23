/**
 * Child side of runInChild (started through child-boot.mjs) with `<module> <export>`, arguments as JSON in
 * BENCH_CHILD_ARGS. Prints one result line and exits, so nothing keeps the event loop alive afterwards.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot, resultMark } from './child.js';

const [modulePath, exportName] = process.argv.slice(2);
if (!modulePath || !exportName) throw new Error('usage: child-main.ts <module> <export>');
const mod = (await import(pathToFileURL(path.resolve(projectRoot, modulePath)).href)) as Record<
  string,
  unknown
>;
const fn = mod[exportName];
if (typeof fn !== 'function') throw new Error(`${modulePath} has no function export ${exportName}`);
const value = await (fn as (args: unknown) => Promise<unknown>)(
  JSON.parse(process.env.BENCH_CHILD_ARGS ?? 'null'),
);
const maxRssMb = process.resourceUsage().maxRSS / 1024;
process.stdout.write(`\n${resultMark}${JSON.stringify({ value, maxRssMb })}\n`, () => process.exit(0));
