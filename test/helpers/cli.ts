import { spawn } from 'node:child_process';
import path from 'node:path';

export const projectRoot = path.resolve(import.meta.dirname, '../..');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts `cpe` from the TypeScript sources as a user would run it (as another user with `as`); returns the child. */
export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd = projectRoot,
  as?: { uid: number; gid: number },
) {
  return spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'src/cli/bin.ts'), ...args], {
    env: { ...env, CI: '1' },
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...as,
  });
}

/**
 * Starts `cpe ARGS` and collects its output as it comes (`out.stdout` and `out.stderr` grow while it runs, for a test
 * that waits for a line before it acts); `closed` settles with how the process ended.
 */
export function startCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
  as?: { uid: number; gid: number },
) {
  const child = spawnCli(args, env, cwd, as);
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => {
    out.stdout += d;
  });
  child.stderr.on('data', (d) => {
    out.stderr += d;
  });
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  return { child, out, closed };
}

/**
 * Runs `cpe ARGS` to the end and collects its output and exit code. With `timeoutMs`, a process still running then
 * is killed (its result has signal SIGKILL): a test can tell a command that never exits from one that failed.
 */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
  timeoutMs?: number,
  as?: { uid: number; gid: number },
): Promise<CliResult> {
  const { child, out, closed } = startCli(args, env, cwd, as);
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    const { code, signal } = await closed;
    return { code, signal, stdout: out.stdout, stderr: out.stderr };
  } finally {
    clearTimeout(timer);
  }
}
