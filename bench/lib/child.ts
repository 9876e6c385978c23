/**
 * Runs one measured task in a child process of its own, so that one contender's memory never shows up in
 * another's peak RSS: child-main imports the task module, calls the named export with the JSON arguments, and
 * prints the result with its own `process.resourceUsage().maxRSS`.
 *
 * The children run plain JavaScript, as users run cpe and its peers: compileChildren() (build.ts) compiles the
 * modules they load (tsconfig.bench.json, into node_modules/.cache/cpe-bench) before the first one starts. A TypeScript
 * loader in the child (tsx, registered by child-boot.mjs: the fallback, and what measuring cpe's sources needs)
 * costs every contender ~30 MB of RSS at its start and more as it runs (its loader thread, source maps of every
 * module loaded): 234 against 178 MB for cpe over 1,000 small documents, 290 against 214 MB over 5,000.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The folder of cpe's package.json above this file (bench/lib, or its compiled copy under node_modules/.cache). */
function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'cpe'
    )
      return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json of cpe above ${from}`);
  }
}

export const projectRoot = findProjectRoot(here);
const RESULT_MARK = '@@bench-result ';
/** Where compileChildren() (build.ts) writes the children's modules as JavaScript. */
export const COMPILED_CHILDREN = path.join(projectRoot, 'node_modules/.cache/cpe-bench');
let compiled = false;

/** From now on, children start from COMPILED_CHILDREN (compileChildren() calls this once it has compiled them). */
export function useCompiledChildren(): void {
  compiled = true;
}

export interface ChildResult<T> {
  value: T;
  /** peak resident set size of the child process, MB */
  maxRssMb: number;
}

/**
 * Calls `exportName(args)` from `modulePath` (relative to the project root) in a fresh Node process and returns
 * what it returned. The child's stderr is kept only for the error message when it fails.
 */
export function runInChild<T>(
  modulePath: string,
  exportName: string,
  args: unknown,
  options: { env?: NodeJS.ProcessEnv; nodeArgs?: string[] } = {},
): Promise<ChildResult<T>> {
  // the compiled children once compileChildren() ran; before that (or measuring cpe's sources) tsx in the child
  const entry = compiled
    ? [
        path.join(COMPILED_CHILDREN, 'bench/lib/child-main.js'),
        path.join(COMPILED_CHILDREN, modulePath.replace(/\.ts$/, '.js')),
      ]
    : [path.join(projectRoot, 'bench/lib/child-boot.mjs'), modulePath];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...entry, exportName], {
      cwd: projectRoot,
      env: { ...process.env, ...options.env, BENCH_CHILD_ARGS: JSON.stringify(args) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      // keep the tail only: a run's log lines can be many
      stderr = (stderr + d).slice(-20_000);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_MARK));
      if (code !== 0 || !line) {
        reject(new Error(`${modulePath}#${exportName} exited ${code}: ${stderr.slice(-4000)}`));
        return;
      }
      resolve(JSON.parse(line.slice(RESULT_MARK.length)) as ChildResult<T>);
    });
  });
}

export const resultMark = RESULT_MARK;
