/**
 * Runs one measured task in a child process of its own, so that one contender's memory never shows up in
 * another's peak RSS: `node bench/lib/child-boot.mjs` registers tsx in process, child-main.ts imports the task
 * module, calls the named export with the JSON arguments, and prints the result with its own
 * `process.resourceUsage().maxRSS`.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const projectRoot = path.resolve(here, '../..');
const RESULT_MARK = '@@bench-result ';

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
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [...(options.nodeArgs ?? []), path.join(here, 'child-boot.mjs'), modulePath, exportName],
      {
        cwd: projectRoot,
        env: { ...process.env, ...options.env, BENCH_CHILD_ARGS: JSON.stringify(args) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
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
