/**
 * Entry point of an extraction child process (see isolate.ts). Receives one job at a time over IPC, answers
 * with the document or with the error's code and message, and ends when its parent goes away, busy or not.
 */
import { Worker } from 'node:worker_threads';
import { CpeError } from '../errors.js';
import { extractFile } from './extract-file.js';
import type { ExtractOptions } from './types.js';

export interface IsolateJob {
  id: number;
  path: string;
  options: Partial<ExtractOptions>;
}

export interface IsolateFailure {
  name: string;
  code?: string;
  message: string;
  file?: string;
  retryable?: boolean;
  details?: Record<string, unknown>;
}

function describe(error: unknown): IsolateFailure {
  if (error instanceof CpeError) {
    return {
      name: error.name,
      code: error.code,
      message: error.message,
      file: (error as { file?: string }).file,
      retryable: error.retryable,
      details: error.details,
    };
  }
  return {
    name: error instanceof Error ? error.name : 'Error',
    message: String((error as Error)?.message ?? error),
  };
}

/** how often the watchdog looks for the parent */
const PARENT_POLL_MS = 500;

/**
 * The watchdog thread's code: it kills this process as soon as its parent process id is no longer the parent's (it
 * is the init process's, or a subreaper's, once the parent is gone). Plain JavaScript: the thread loads no module.
 */
const WATCHDOG = `const { workerData } = require('node:worker_threads');
setInterval(() => {
  if (process.ppid !== workerData.parentPid) process.kill(process.pid, 'SIGKILL');
}, workerData.pollMs);`;

/**
 * Ends this process soon after its parent is gone, from a thread of its own. The parent enforces the time and memory
 * limits of a file; killed (SIGKILL, or its "exit now" on a second SIGTERM), it leaves this process to the init
 * process, and 'disconnect' fires only when the main thread is free: a parser busy for minutes on a hostile file
 * (100,000 nested operators in a PDF) ran on that long, at full CPU and with no limit. The thread is unreferenced: it
 * does not keep the process alive. Costs about 10 MB of memory and 70-80 ms of CPU (its own Node environment, started
 * beside the module loading) once per process, nothing per file: a process reads file after file.
 */
function watchParent(parentPid: number): void {
  const watchdog = new Worker(WATCHDOG, {
    eval: true,
    workerData: { parentPid, pollMs: PARENT_POLL_MS },
    execArgv: [], // no TypeScript loader or heap flags: the thread runs the few lines above
  });
  watchdog.on('error', () => undefined); // without it, 'disconnect' still ends an idle process
  watchdog.unref();
}

if (process.send) {
  // the parent's id, given by the parent (read here it could already be the init process's)
  const parentPid = Number(process.argv[2]);
  watchParent(Number.isInteger(parentPid) && parentPid > 0 ? parentPid : process.ppid);
  process.on('message', (job: IsolateJob) => {
    extractFile(job.path, job.options).then(
      (document) => process.send?.({ id: job.id, ok: true, document }),
      (error: unknown) => process.send?.({ id: job.id, ok: false, error: describe(error) }),
    );
  });
  // the parent is gone (or let us go): nothing left to do
  process.on('disconnect', () => process.exit(0));
  // modules are loaded: the parent starts a file's clock only now, so a slow start is not the file's fault
  process.send({ ready: true });
}
