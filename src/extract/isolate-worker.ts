/**
 * Entry point of an extraction child process (see isolate.ts). Receives one job at a time over IPC, answers
 * with the document or with the error's code and message, and exits when its parent goes away.
 */
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

if (process.send) {
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
