import { redactCredentials } from './util/credentials.js';

/**
 * Every error cpe raises on purpose has a code from this file. Build-time errors (configuration, pipeline
 * planning) and run-time errors (a step failing on a document) are different classes; the engine wraps a
 * plugin's error exactly once (StepError) and keeps the original as `cause`.
 */
export const ErrorCodes = {
  // configuration and planning (build time)
  CONFIG_INVALID: 'CONFIG_INVALID',
  PIPELINE_NOT_FOUND: 'PIPELINE_NOT_FOUND',
  PIPELINE_INVALID: 'PIPELINE_INVALID',
  PLUGIN_INVALID: 'PLUGIN_INVALID',
  PLUGIN_CONFLICT: 'PLUGIN_CONFLICT',
  USAGE: 'USAGE',
  // run time
  STEP_FAILED: 'STEP_FAILED',
  CANCELLED: 'CANCELLED',
  TIMEOUT: 'TIMEOUT',
  LEASE_LOST: 'LEASE_LOST',
  /** the database connection failed or was lost (server restarting, network): retryable */
  DATABASE_UNAVAILABLE: 'DATABASE_UNAVAILABLE',
  /** a deadlock or lock wait timeout between concurrent workers: retryable */
  DATABASE_CONFLICT: 'DATABASE_CONFLICT',
  // input files (validate / extract)
  FILE_UNREADABLE: 'FILE_UNREADABLE',
  FILE_EMPTY: 'FILE_EMPTY',
  FILE_TOO_LARGE: 'FILE_TOO_LARGE',
  UNSUPPORTED_FORMAT: 'UNSUPPORTED_FORMAT',
  FORMAT_MISMATCH: 'FORMAT_MISMATCH',
  LEGACY_FORMAT: 'LEGACY_FORMAT',
  ENCRYPTED_DOCUMENT: 'ENCRYPTED_DOCUMENT',
  PASSWORD_REQUIRED: 'PASSWORD_REQUIRED',
  CORRUPT_FILE: 'CORRUPT_FILE',
  ARCHIVE_BOMB: 'ARCHIVE_BOMB',
  TOO_MANY_PAGES: 'TOO_MANY_PAGES',
  EXTRACTION_TIMEOUT: 'EXTRACTION_TIMEOUT',
  EXTRACTION_MEMORY: 'EXTRACTION_MEMORY',
  // providers
  PROVIDER_UNAVAILABLE: 'PROVIDER_UNAVAILABLE',
  PROVIDER_ERROR: 'PROVIDER_ERROR',
  INVALID_ANSWER: 'INVALID_ANSWER',
  COLLECTION_MISMATCH: 'COLLECTION_MISMATCH',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export interface CpeErrorOptions {
  cause?: unknown;
  /** true: trying again may succeed (network, timeout, 429/5xx). Default false (permanent). */
  retryable?: boolean;
  details?: Record<string, unknown>;
}

/** Base class of all deliberate cpe errors. */
export class CpeError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: CpeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details ?? {};
  }
}

/** A problem found before anything runs: bad configuration, bad pipeline rows, bad plugin modules. */
export class ConfigError extends CpeError {}

/** A problem with one input file. Always names the file; permanent unless said otherwise. */
export class FileError extends CpeError {
  readonly file: string;
  /** the message without the file's name in front */
  readonly reason: string;
  constructor(code: ErrorCode, file: string, reason: string, options: CpeErrorOptions = {}) {
    super(code, `${file}: ${reason}`, options);
    this.file = file;
    this.reason = reason;
  }
}

/**
 * Damage in one part of a file (malformed XML, a wrong checksum), as opposed to a limit (a bomb) or a package that
 * cannot be opened: what an extractor may skip with a warning while the rest of the file is read.
 */
export const isCorruptFile = (error: unknown): error is FileError =>
  error instanceof FileError && error.code === ErrorCodes.CORRUPT_FILE;

/** A retryable failure talking to a server (network, timeout, 429, 5xx). */
export class ProviderError extends CpeError {
  constructor(message: string, options: CpeErrorOptions & { status?: number } = {}) {
    super(ErrorCodes.PROVIDER_ERROR, message, { retryable: true, ...options });
  }
}

/**
 * A cpe error by shape, not only by class: a custom plugin may bring its own copy of cpe (another module
 * instance), and its errors must still be classified right.
 */
export function isCpeError(error: unknown): error is CpeError {
  if (error instanceof CpeError) return true;
  const e = error as { code?: unknown; retryable?: unknown } | null;
  return (
    error instanceof Error &&
    typeof e?.code === 'string' &&
    e.code in ErrorCodes &&
    typeof e.retryable === 'boolean'
  );
}

/**
 * Whether trying again may succeed: a cpe error says so itself; any other thrown value may say so with a boolean
 * `retryable` (a plugin outside this project cannot import ProviderError, and the README tells it to set the flag),
 * and without one, a transient socket error is retryable.
 */
export function isRetryable(error: unknown): boolean {
  if (isCpeError(error)) return error.retryable;
  const { retryable } = (typeof error === 'object' && error !== null ? error : {}) as { retryable?: unknown };
  return typeof retryable === 'boolean' ? retryable : isTransientNodeError(error);
}

/** Node socket errors that mean "try again later". */
export function isTransientNodeError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' &&
    ['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET'].includes(
      code,
    )
  );
}

/** The message of any thrown value, with the cause chain, for storage in last_error / ki_dev. */
/**
 * The message of anything thrown: an Error's message, a string itself, an object's `message` when it has one as
 * text, else the object as JSON (a plugin that throws `{ code, message }` or `{ reason }` is read, not shown as
 * "[object Object]").
 */
export function messageOf(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message;
  if (typeof thrown === 'object' && thrown !== null) {
    const { message } = thrown as { message?: unknown };
    if (typeof message === 'string') return message;
    try {
      const json = JSON.stringify(thrown);
      if (json !== undefined && json !== '{}') return json;
    } catch {
      // a cycle, a BigInt: the plain string below
    }
  }
  return String(thrown);
}

export function describeError(error: unknown, maxLength = 4000): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const message = messageOf(current);
    if (!parts.some((part) => part.includes(message))) parts.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  // a message may quote a configured URL with its password (an Ollama host, a Qdrant URL)
  const text = redactCredentials(parts.join(' <- caused by: '));
  return text.length > maxLength ? `${text.slice(0, maxLength)}…` : text;
}

/**
 * The same file error, told about another name: steps read the archived copy of a document but users know
 * the source path, so messages must name that.
 */
export function renameFileError(error: unknown, shownAs: string): unknown {
  if (
    !isCpeError(error) ||
    typeof (error as FileError).file !== 'string' ||
    (error as FileError).file === shownAs
  )
    return error;
  const file = (error as FileError).file;
  const reason = error.message.startsWith(`${file}: `) ? error.message.slice(file.length + 2) : error.message;
  return new FileError(error.code, shownAs, reason, {
    cause: error.cause,
    retryable: error.retryable,
    details: error.details,
  });
}
