/**
 * Extraction in a child process that can be stopped: a file that hangs the parser, or makes it allocate
 * gigabytes, becomes that file's error (EXTRACTION_TIMEOUT, EXTRACTION_MEMORY) instead of the end of the run.
 *
 * Why a child process and not a worker thread: a worker's resourceLimits cap only the V8 heap, but the
 * dangerous allocations are ArrayBuffers outside it (a JBIG2 "bomb" used as a content stream decodes to
 * gigabytes of bitmap). A process can be measured as a whole (its resident set, read from /proc on Linux,
 * every 100 ms) and killed as a whole. The V8 heap is capped as well (--max-old-space-size), which also
 * covers systems without /proc.
 *
 * Children are reused for the next file while they stay small (a few idle ones are kept, unreferenced, so
 * they never keep the process alive); a child that was killed, crashed or grew large is replaced. A child whose
 * parent is gone (killed, or gone at once on a second SIGTERM) ends itself, even in the middle of a file, since
 * the limits above are the parent's (isolate-worker.ts).
 * The child runs the same module tree as the caller: the TypeScript sources under tsx (tests, scripts) or
 * the compiled JavaScript in dist/, chosen by this file's own extension.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CpeError, type ErrorCode, ErrorCodes, FileError } from '../errors.js';
import type { IsolateFailure, IsolateJob } from './isolate-worker.js';
import type { ExtractedDocument, ExtractOptions } from './types.js';

export interface IsolateOptions extends Partial<ExtractOptions> {
  /** wall-clock limit for one file; default 30000 */
  timeoutMs?: number;
  /** memory limit of the extraction process (resident set and V8 heap); default 1024 */
  maxMemoryMb?: number;
  /** aborts the extraction (the child is killed); the promise rejects with a CANCELLED error */
  signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MEMORY_MB = 1024;
const POLL_MS = 100;
const STARTUP_TIMEOUT_MS = 120_000;
const MAX_IDLE = 2;
/** a child that has grown beyond this share of its limit is retired after its file */
const RETIRE_SHARE = 0.5;

const workerModule = fileURLToPath(
  new URL(`./isolate-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
);

/**
 * Flags for the child: the parent's, without debugger/heap flags and without a script given on the command line, plus
 * a TypeScript loader when needed.
 */
function childExecArgv(maxMemoryMb: number): string[] {
  const args: string[] = [];
  const parent = process.execArgv;
  const typescript = workerModule.endsWith('.ts');
  for (let i = 0; i < parent.length; i++) {
    const arg = parent[i]!;
    const takesValue = [
      '--require',
      '-r',
      '--import',
      '--loader',
      '--experimental-loader',
      ...EVAL_FLAGS,
    ].includes(arg);
    const value = takesValue ? (parent[i + 1] ?? '') : arg;
    if (takesValue) i++;
    if (/^--(inspect|debug)|^--max-old-space-size|^--max-semi-space-size/.test(arg)) continue;
    // the parent's own script (node --eval "..."): the child would run it instead of isolate-worker, and start a
    // child of its own, and so on
    if (EVAL_FLAGS.includes(arg) || /^--(eval|print|input-type)=/.test(arg)) continue;
    // compiled workers need no TypeScript loader (it costs seconds of start-up); under tsx it is re-added below
    if (/tsx/.test(value)) continue;
    args.push(...(takesValue ? [arg, value] : [arg]));
  }
  // createRequire, not import.meta.resolve: under mocha/tsx this module may run as CommonJS
  if (typescript) args.push('--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href);
  args.push(`--max-old-space-size=${maxMemoryMb}`);
  return args;
}

/** the flags that give node its script on the command line (their value is the script) */
const EVAL_FLAGS = ['--eval', '-e', '--print', '-p', '--input-type'];

interface Child {
  process: ChildProcess;
  maxMemoryMb: number;
  stderr: string;
  /** resolves when the child has loaded its modules, false when it died first */
  ready: Promise<boolean>;
}

const idle: Child[] = [];
let nextJobId = 1;

function spawnChild(maxMemoryMb: number): Child {
  const child: Child = {
    // the child watches for this process's end by its id (isolate-worker.ts)
    process: fork(workerModule, [String(process.pid)], {
      execArgv: childExecArgv(maxMemoryMb),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
      env: { ...process.env, NODE_OPTIONS: '' },
    }),
    maxMemoryMb,
    stderr: '',
    ready: Promise.resolve(false),
  };
  child.ready = new Promise<boolean>((resolve) => {
    const onMessage = (message: { ready?: boolean }) => {
      if (message?.ready !== true) return;
      child.process.off('message', onMessage);
      resolve(true);
    };
    child.process.on('message', onMessage);
    child.process.once('exit', () => resolve(false));
  });
  // pdf.js writes warnings to the console; keep the tail of stderr to recognise a V8 out-of-memory death
  child.process.stdout?.resume();
  child.process.stderr?.on('data', (chunk: Buffer) => {
    child.stderr = (child.stderr + chunk.toString('utf8')).slice(-8192);
  });
  child.process.on('error', () => undefined); // reported through 'exit'
  return child;
}

/** Resident set size in MB, or undefined where /proc is not available. */
function residentMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    return Number.isFinite(pages) ? (pages * 4096) / (1024 * 1024) : undefined;
  } catch {
    return undefined;
  }
}

function setReferenced(child: Child, referenced: boolean): void {
  const handles = [child.process, child.process.stdout, child.process.stderr] as Array<
    { ref?: () => void; unref?: () => void } | null | undefined
  >;
  const channel = (child.process as unknown as { channel?: { ref?: () => void; unref?: () => void } })
    .channel;
  for (const handle of [...handles, channel]) {
    if (referenced) handle?.ref?.();
    else handle?.unref?.();
  }
}

function takeChild(maxMemoryMb: number): Child {
  for (let i = idle.length - 1; i >= 0; i--) {
    const child = idle[i]!;
    if (child.maxMemoryMb === maxMemoryMb && child.process.connected && child.process.exitCode === null) {
      idle.splice(i, 1);
      setReferenced(child, true);
      return child;
    }
  }
  return spawnChild(maxMemoryMb);
}

function releaseChild(child: Child): void {
  const rss = residentMb(child.process.pid);
  const healthy =
    child.process.connected && child.process.exitCode === null && child.process.signalCode === null;
  if (!healthy || idle.length >= MAX_IDLE || (rss !== undefined && rss > child.maxMemoryMb * RETIRE_SHARE)) {
    child.process.kill('SIGKILL');
    return;
  }
  setReferenced(child, false);
  idle.push(child);
}

/** Stops all idle extraction processes (for a clean shutdown; running extractions are not affected). */
export function disposeIsolatedWorkers(): void {
  for (const child of idle.splice(0)) child.process.kill('SIGKILL');
}

const formatSeconds = (ms: number): string => `${Number((ms / 1000).toFixed(ms < 1000 ? 3 : 1))} s`;

/** Re-creates the child's error on this side: same class where it matters, same code and message. */
function reviveError(failure: IsolateFailure, path: string): Error {
  const code = failure.code as ErrorCode | undefined;
  if (code && (Object.values(ErrorCodes) as string[]).includes(code)) {
    const options = { retryable: failure.retryable, details: failure.details };
    if (failure.name === 'FileError' || failure.file !== undefined) {
      const file = failure.file ?? path;
      const prefix = `${file}: `;
      const reason = failure.message.startsWith(prefix)
        ? failure.message.slice(prefix.length)
        : failure.message;
      return new FileError(code, file, reason, options);
    }
    return new CpeError(code, failure.message, options);
  }
  return new FileError(ErrorCodes.CORRUPT_FILE, path, `extraction failed (${failure.message})`);
}

/**
 * extractFile in a separate, killable process. Rejects with FileError EXTRACTION_TIMEOUT ("timed out after
 * 30 s"), EXTRACTION_MEMORY, or the extractor's own error (same code and message).
 */
export function extractIsolated(path: string, options: IsolateOptions = {}): Promise<ExtractedDocument> {
  const {
    timeoutMs = DEFAULT_TIMEOUT_MS,
    maxMemoryMb = DEFAULT_MEMORY_MB,
    signal,
    ...extractOptions
  } = options;
  if (signal?.aborted)
    return Promise.reject(new CpeError(ErrorCodes.CANCELLED, `${path}: extraction cancelled`));
  const child = takeChild(maxMemoryMb);
  const id = nextJobId++;
  return new Promise<ExtractedDocument>((resolve, reject) => {
    let settled = false;
    const finish = (
      outcome: { document: ExtractedDocument } | { error: Error },
      keepChild: boolean,
    ): void => {
      if (settled) return;
      settled = true;
      clearTimeout(startup);
      clearTimeout(timer);
      clearInterval(poll);
      signal?.removeEventListener('abort', onAbort);
      child.process.off('message', onMessage);
      child.process.off('exit', onExit);
      if (keepChild) releaseChild(child);
      else child.process.kill('SIGKILL');
      if ('document' in outcome) resolve(outcome.document);
      else reject(outcome.error);
    };
    const onMessage = (message: {
      id: number;
      ok: boolean;
      document?: ExtractedDocument;
      error?: IsolateFailure;
    }) => {
      if (message.id !== id) return;
      if (message.ok && message.document) finish({ document: message.document }, true);
      else
        finish({ error: reviveError(message.error ?? { name: 'Error', message: 'no answer' }, path) }, true);
    };
    const onExit = (code: number | null, signalName: NodeJS.Signals | null) => {
      const outOfMemory =
        /heap out of memory|Allocation failed|Out of memory|OOM/i.test(child.stderr) ||
        signalName === 'SIGABRT';
      const error = outOfMemory
        ? new FileError(ErrorCodes.EXTRACTION_MEMORY, path, `out of memory (limit ${maxMemoryMb} MB)`, {
            details: { limitMb: maxMemoryMb },
          })
        : new FileError(
            ErrorCodes.CORRUPT_FILE,
            path,
            `extraction process died (${signalName ? `signal ${signalName}` : `exit code ${code}`})`,
          );
      finish({ error }, false);
    };
    const onAbort = () =>
      finish({ error: new CpeError(ErrorCodes.CANCELLED, `${path}: extraction cancelled`) }, false);
    let timer: NodeJS.Timeout | undefined;
    const startClock = () =>
      setTimeout(() => {
        finish(
          {
            error: new FileError(
              ErrorCodes.EXTRACTION_TIMEOUT,
              path,
              `timed out after ${formatSeconds(timeoutMs)}`,
              {
                details: { timeoutMs },
              },
            ),
          },
          false,
        );
      }, timeoutMs);
    const poll = setInterval(() => {
      const rss = residentMb(child.process.pid);
      if (rss !== undefined && rss > maxMemoryMb) {
        finish(
          {
            error: new FileError(
              ErrorCodes.EXTRACTION_MEMORY,
              path,
              `out of memory (limit ${maxMemoryMb} MB)`,
              { details: { limitMb: maxMemoryMb, residentMb: Math.round(rss) } },
            ),
          },
          false,
        );
      }
    }, POLL_MS);
    child.process.on('message', onMessage);
    child.process.on('exit', onExit);
    signal?.addEventListener('abort', onAbort, { once: true });
    const job: IsolateJob = { id, path, options: extractOptions };
    // the clock starts when the child has loaded its modules (a cold start under load takes seconds), but
    // a child that never gets ready is stopped too
    const startup = setTimeout(() => {
      finish(
        { error: new CpeError(ErrorCodes.STEP_FAILED, `${path}: extraction process did not start`) },
        false,
      );
    }, STARTUP_TIMEOUT_MS);
    void child.ready.then((ready) => {
      clearTimeout(startup);
      if (!ready || settled) return;
      timer = startClock();
      child.process.send(job, (error) => {
        if (error) {
          const failure = new CpeError(ErrorCodes.STEP_FAILED, `${path}: cannot start extraction`, {
            cause: error,
          });
          finish({ error: failure }, false);
        }
      });
    });
  });
}
