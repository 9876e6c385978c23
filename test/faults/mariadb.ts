import { spawn } from 'node:child_process';

/**
 * Stopping and starting this machine's MariaDB for the restart case. It is only used by tests; whatever happens,
 * the suite leaves it running (`ensureMariadbRunning` in after hooks).
 */

function exec(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => {
      output += d;
    });
    child.stderr.on('data', (d) => {
      output += d;
    });
    child.on('error', (error) => resolve({ code: -1, output: String(error) }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

const ADMIN = ['--user=root', '--host=127.0.0.1', '--port=3306'];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function mariadbAnswers(): Promise<boolean> {
  return (await exec('mariadb-admin', [...ADMIN, '--connect-timeout=2', 'ping'])).code === 0;
}

async function waitFor(up: boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await mariadbAnswers()) === up) return true;
    await pause(250);
  }
  return false;
}

export async function startMariadb(timeoutMs = 60_000): Promise<void> {
  if (await mariadbAnswers()) return;
  const started = await exec('start-stop-daemon', [
    '--start',
    '--oknodo',
    '--background',
    '--exec',
    '/usr/sbin/mariadbd',
  ]);
  if (started.code !== 0) throw new Error(`could not start MariaDB: ${started.output}`);
  if (!(await waitFor(true, timeoutMs))) throw new Error(`MariaDB did not answer within ${timeoutMs} ms`);
}

/** Shuts MariaDB down (clients see refused connections), keeps it down for `downMs`, starts it again. */
export async function restartMariadb(downMs: number, whileDown?: () => void): Promise<{ downForMs: number }> {
  const stopped = Date.now();
  const shutdown = await exec('mariadb-admin', [...ADMIN, 'shutdown']);
  if (shutdown.code !== 0) throw new Error(`could not shut MariaDB down: ${shutdown.output}`);
  if (!(await waitFor(false, 60_000))) throw new Error('MariaDB still answers after shutdown');
  whileDown?.();
  await pause(downMs);
  await startMariadb();
  return { downForMs: Date.now() - stopped };
}

/** For after hooks: MariaDB must answer when the suite ends, also when a case failed mid-restart. */
export async function ensureMariadbRunning(): Promise<void> {
  if (await mariadbAnswers()) return;
  await startMariadb();
}
