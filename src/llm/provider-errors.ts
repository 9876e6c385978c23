import { CpeError, ErrorCodes, ProviderError } from '../errors.js';

/** HTTP statuses worth another try: timeouts, conflicts, rate limits, overload (529) and server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

/** a server's Retry-After is honoured up to this long (one asking for more is asked again then) */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * Retry-After as milliseconds: `retry-after-ms` (Anthropic), or `retry-after` in seconds or as an HTTP date.
 * Undefined when absent or unreadable.
 */
export function parseRetryAfter(
  headers: { get(name: string): string | null } | undefined,
): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The error a backend throws for a failed HTTP answer: retryable or not by status, Retry-After kept. */
export function httpFailure(
  provider: string,
  status: number,
  message: string,
  retryAfterMs: number | undefined,
  cause?: unknown,
): CpeError {
  const text = `${provider}: HTTP ${status}: ${message}`;
  const details = { provider, status, retryAfterMs };
  if (isRetryableStatus(status)) return new ProviderError(text, { cause, details });
  const code = status === 401 || status === 403 ? ErrorCodes.PROVIDER_UNAVAILABLE : ErrorCodes.PROVIDER_ERROR;
  return new CpeError(code, text, { cause, details, retryable: false });
}

/**
 * A request that never got an HTTP answer (refused, reset, timed out): worth another try. `timedOut` marks one
 * that got no answer within the client's timeout (the limiter retries those fewer times: MAX_TIMEOUT_RETRIES).
 */
export function networkFailure(
  provider: string,
  message: string,
  cause?: unknown,
  options: { timedOut?: boolean } = {},
): CpeError {
  return new ProviderError(`${provider}: ${message}`, {
    cause,
    details: { provider, ...(options.timedOut ? { timedOut: true } : {}) },
  });
}

/** Whether the error is a request that got no answer within its timeout (networkFailure's `timedOut`). */
export function timedOut(error: unknown): boolean {
  return error instanceof CpeError && error.details.timedOut === true;
}

/**
 * An answer that came but cannot be read as the provider's reply: a proxy's error page, a body cut off, JSON of
 * another shape. Worth another try, like a dropped connection: the next answer may well be whole.
 */
export function malformedAnswer(provider: string, message: string, cause?: unknown): CpeError {
  return new ProviderError(`${provider}: ${message}`, { cause, details: { provider } });
}

/** Retry-After recorded on an error by httpFailure, if any. */
export function retryAfterOf(error: unknown): number | undefined {
  if (!(error instanceof CpeError)) return undefined;
  const value = error.details.retryAfterMs;
  return typeof value === 'number' ? value : undefined;
}
