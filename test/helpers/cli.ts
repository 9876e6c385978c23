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
 * Runs `cpe ARGS` to the end and collects its output and exit code. With `timeoutMs`, a process still running then
 * is killed (its result has signal SIGKILL): a test can tell a command that never exits from one that failed.
 */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
  timeoutMs?: number,
  as?: { uid: number; gid: number },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawnCli(args, env, cwd, as);
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}
