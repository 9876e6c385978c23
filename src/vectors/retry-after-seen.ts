import { subscribe } from 'node:diagnostics_channel';
import { parseRetryAfter } from '../llm/provider-errors.js';

/**
 * The Retry-After headers of the 429 answers each origin sent, as undici received them. @qdrant/js-client-rest keeps
 * no headers of a 429 that carries one: it throws QdrantClientResourceExhaustedError with `retry_after` read from the
 * header's first character only ('20' becomes 2 s, '1.5' 1 s), or, for an HTTP date, a plain error 'Invalid
 * retryAfter value: T'. So cpe reads the header itself, from undici's documented diagnostics channel
 * `undici:request:headers`, which the client's requests (undici under fetch) publish before the client sees the
 * answer.
 */
interface Seen {
  retryAfter: string | null;
  retryAfterMs: string | null;
  /** performance.now() when the answer came */
  at: number;
}

const seen = new Map<string, Seen>();
let watching = false;

/** A request's origin as undici gives it (a string or a URL), as URL.origin: 'http://127.0.0.1:6333'. */
function originOf(value: unknown): string | undefined {
  try {
    return new URL(String(value)).origin;
  } catch {
    return undefined;
  }
}

function onHeaders(message: unknown): void {
  const { request, response } = message as {
    request?: { origin?: unknown };
    response?: { statusCode?: number; headers?: unknown[] };
  };
  if (response?.statusCode !== 429 || !Array.isArray(response.headers)) return;
  const origin = originOf(request?.origin);
  if (!origin) return;
  const entry: Seen = { retryAfter: null, retryAfterMs: null, at: performance.now() };
  // raw headers: name, value, name, value, ... (Buffers or strings)
  for (let i = 0; i + 1 < response.headers.length; i += 2) {
    const name = String(response.headers[i]).toLowerCase();
    if (name === 'retry-after') entry.retryAfter = String(response.headers[i + 1]);
    else if (name === 'retry-after-ms') entry.retryAfterMs = String(response.headers[i + 1]);
  }
  seen.set(origin, entry);
}

/** Starts recording the Retry-After of 429 answers (once per process; cheap: a status check per answer). */
export function watchRetryAfter(): void {
  if (watching) return;
  watching = true;
  subscribe('undici:request:headers', onHeaders);
}

/**
 * The Retry-After (ms) of the last 429 the origin ('http://qdrant:6333') answered since `since` (performance.now()),
 * seconds or an HTTP date; undefined when none came or it is unreadable.
 */
export function retryAfterSeen(url: string, since: number): number | undefined {
  const origin = originOf(url);
  const entry = origin === undefined ? undefined : seen.get(origin);
  if (!entry || entry.at < since) return undefined;
  return parseRetryAfter({
    get: (name) =>
      name === 'retry-after' ? entry.retryAfter : name === 'retry-after-ms' ? entry.retryAfterMs : null,
  });
}
