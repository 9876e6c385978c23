import { CpeError, ErrorCodes, isRetryable } from '../errors.js';
import { retryAfterOf, timedOut } from './provider-errors.js';
import { noticeLlmRetry } from './retry-notices.js';
import type { LimitSettings, SharedLimits } from './types.js';

export const DEFAULT_LIMITS: LimitSettings = {
  concurrency: 4,
  requestsPerMinute: 0,
  tokensPerMinute: 0,
  maxRetries: 5,
};

export interface LimiterOptions {
  /** first backoff delay; doubles per attempt (default 1000 ms) */
  baseDelayMs?: number;
  /** cap of one backoff delay, also of a Retry-After (default 60 s) */
  maxDelayMs?: number;
  /** injectable for tests */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  /** called before each retry (for logging) */
  onRetry?: (info: {
    attempt: number;
    delayMs: number;
    error: unknown;
    retryAfterMs: number | undefined;
  }) => void;
}

import { abortableSleep } from '../util/sleep.js';

export { abortableSleep };

const WINDOW_MS = 60_000;

/**
 * Retries of a request whose answer did not come within the timeout, whatever `maxRetries` allows: each such try
 * holds a request slot for the whole timeout (2-5 minutes), and a server that let one pass is hung or overloaded.
 * With the engine's own attempts of the step on top, 5 of them made one call of a hung server take 36 minutes.
 */
export const MAX_TIMEOUT_RETRIES = 1;

interface WindowEntry {
  at: number;
  tokens: number;
}

/**
 * Limits of one provider endpoint, shared by every step that talks to it: requests in flight, requests and
 * tokens per sliding minute; and retries of retryable failures with capped exponential backoff, as many as each
 * request asks for (`maxRetries` of the settings when it does not say). A Retry-After from the server pauses the
 * whole endpoint (not just the one request), since the limit is the account's.
 */
export class RateLimiter {
  private limits: LimitSettings;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly now: () => number;
  private readonly onRetry: LimiterOptions['onRetry'];
  private active = 0;
  private pausedUntil = 0;
  private window: WindowEntry[] = [];
  private slotWaiters: Array<() => void> = [];

  constructor(limits: Partial<LimitSettings> = {}, options: LimiterOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...stripUndefined(limits) };
    this.baseDelayMs = options.baseDelayMs ?? 1000;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    this.sleep = options.sleep ?? abortableSleep;
    this.now = options.now ?? Date.now;
    this.onRetry = options.onRetry;
  }

  get settings(): Readonly<LimitSettings> {
    return this.limits;
  }

  /**
   * The tightest value wins; 0 (unlimited) never loosens a set limit. Retries are no shared limit: a step's
   * max_retries goes with its requests (run), and one step's 0 took them from every other step's.
   */
  tighten(limits: Partial<SharedLimits>): void {
    const tight = (current: number, wanted: number | undefined, zeroIsUnlimited: boolean) => {
      if (wanted === undefined) return current;
      if (zeroIsUnlimited) {
        if (wanted === 0) return current;
        if (current === 0) return wanted;
      }
      return Math.min(current, wanted);
    };
    this.limits = {
      ...this.limits,
      concurrency: Math.max(1, tight(this.limits.concurrency, limits.concurrency, false)),
      requestsPerMinute: tight(this.limits.requestsPerMinute, limits.requestsPerMinute, true),
      tokensPerMinute: tight(this.limits.tokensPerMinute, limits.tokensPerMinute, true),
    };
  }

  /**
   * Runs `call` under the limits, retrying retryable failures up to `maxRetries` times. `estimatedTokens` books
   * the token budget up front; `call` returns the real figure, which replaces the estimate in the window.
   */
  async run<T>(
    estimatedTokens: number,
    call: () => Promise<{ value: T; tokens: number }>,
    signal?: AbortSignal,
    maxRetries: number = this.limits.maxRetries,
  ): Promise<T> {
    let timeouts = 0;
    for (let attempt = 0; ; attempt++) {
      const entry = await this.acquire(estimatedTokens, signal);
      let delayMs: number;
      try {
        const { value, tokens } = await call();
        entry.tokens = tokens;
        return value;
      } catch (error) {
        if (!isRetryable(error) || attempt >= maxRetries || signal?.aborted) throw error;
        if (timedOut(error) && ++timeouts > MAX_TIMEOUT_RETRIES) throw error;
        const retryAfterMs = retryAfterOf(error);
        const backoff = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** attempt);
        // jitter spreads the retries of concurrent requests; a server's Retry-After is taken as given
        delayMs =
          retryAfterMs !== undefined
            ? Math.min(this.maxDelayMs, retryAfterMs)
            : backoff * (0.5 + Math.random() / 2);
        if (retryAfterMs !== undefined) this.pausedUntil = Math.max(this.pausedUntil, this.now() + delayMs);
        this.onRetry?.({ attempt: attempt + 1, delayMs, error, retryAfterMs });
        noticeLlmRetry({ attempt: attempt + 1, maxRetries, delayMs, error });
      } finally {
        this.release(entry);
      }
      await this.sleep(delayMs, signal);
    }
  }

  private readonly holding = new Set<WindowEntry>();

  private release(entry: WindowEntry): void {
    if (!this.holding.delete(entry)) return;
    this.active--;
    this.slotWaiters.shift()?.();
  }

  /**
   * Until a slot is released, or the signal aborts: a waiter that gives up leaves the queue at once (acquire then
   * hands a free slot, or a wake-up it took, on to the next waiter), so the waiters behind it do not wait for a
   * release that never comes.
   */
  private slotFreed(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = () => {
        signal?.removeEventListener('abort', giveUp);
        resolve();
      };
      const giveUp = () => {
        const at = this.slotWaiters.indexOf(wake);
        if (at >= 0) this.slotWaiters.splice(at, 1);
        resolve();
      };
      this.slotWaiters.push(wake);
      signal?.addEventListener('abort', giveUp, { once: true });
    });
  }

  private async acquire(tokens: number, signal?: AbortSignal): Promise<WindowEntry> {
    for (;;) {
      if (signal?.aborted) {
        // a free slot (a wake-up this waiter took, or one freed as it gave up) goes on to the next waiter
        if (this.active < this.limits.concurrency) this.slotWaiters.shift()?.();
        throw new CpeError(ErrorCodes.CANCELLED, 'cancelled while waiting for a request slot');
      }
      const now = this.now();
      this.window = this.window.filter((e) => e.at > now - WINDOW_MS);
      const { concurrency, requestsPerMinute, tokensPerMinute } = this.limits;
      if (this.active >= concurrency) {
        await this.slotFreed(signal);
        continue;
      }
      let waitMs = 0;
      if (this.pausedUntil > now) waitMs = this.pausedUntil - now;
      if (requestsPerMinute > 0 && this.window.length >= requestsPerMinute) {
        waitMs = Math.max(waitMs, this.window[0]!.at + WINDOW_MS - now);
      }
      if (tokensPerMinute > 0 && this.window.length > 0) {
        let used = this.window.reduce((sum, e) => sum + e.tokens, 0);
        // wait until enough of the oldest bookings leave the window; a single oversized request still runs
        for (const e of this.window) {
          if (used + tokens <= tokensPerMinute) break;
          used -= e.tokens;
          waitMs = Math.max(waitMs, e.at + WINDOW_MS - now);
        }
      }
      if (waitMs > 0) {
        await this.sleep(waitMs, signal);
        continue;
      }
      const entry: WindowEntry = { at: now, tokens };
      this.window.push(entry);
      this.holding.add(entry);
      this.active++;
      return entry;
    }
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
