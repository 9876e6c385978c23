import { expect } from 'chai';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { MAX_TIMEOUT_RETRIES, RateLimiter } from '../../../src/llm/limiter.js';
import { networkFailure } from '../../../src/llm/provider-errors.js';
import { describeRetry, onLlmRetry, type RetryNotice } from '../../../src/llm/retry-notices.js';

describe('llm/limiter', () => {
  it('lets a request waiting for a slot be cancelled at once, and the requests behind it still run', async () => {
    const limiter = new RateLimiter({ concurrency: 1, maxRetries: 0 });
    let releaseA!: () => void;
    const a = limiter.run(
      1,
      () =>
        new Promise<{ value: string; tokens: number }>((resolve) => {
          releaseA = () => resolve({ value: 'A', tokens: 1 });
        }),
    );
    const abort = new AbortController();
    const b = limiter.run(1, async () => ({ value: 'B', tokens: 1 }), abort.signal);
    const c = limiter.run(1, async () => ({ value: 'C', tokens: 1 }));
    let bSettled = false;
    const bOutcome = b.then(
      () => 'ok',
      (error: unknown) => {
        bSettled = true;
        return error instanceof CpeError ? error.code : String(error);
      },
    );
    await new Promise((r) => setImmediate(r));
    abort.abort();
    await new Promise((r) => setImmediate(r));
    // cancelled while A still holds the slot, not when A is done
    expect(bSettled).to.equal(true);
    expect(await bOutcome).to.equal(ErrorCodes.CANCELLED);
    releaseA();
    expect(await a).to.equal('A');
    // C was behind B: it gets the slot A frees (before, B's wake-up was lost and C waited for good)
    expect(await c).to.equal('C');
  });

  it('retries each request as often as it asks (the settings when it does not), whatever other requests ask', async () => {
    const limiter = new RateLimiter({ maxRetries: 5 }, { sleep: async () => undefined });
    const failing = (failures: number) => {
      const state = { calls: 0 };
      const call = async () => {
        state.calls++;
        if (state.calls <= failures)
          throw new CpeError(ErrorCodes.PROVIDER_ERROR, 'HTTP 529', { retryable: true });
        return { value: 'ok', tokens: 1 };
      };
      return { state, call };
    };
    const zero = failing(1);
    const none = await limiter.run(1, zero.call, undefined, 0).catch((error: unknown) => error);
    expect(none).to.be.instanceOf(CpeError);
    expect(zero.state.calls).to.equal(1);
    // above the default, and untouched by the request that asked for none
    const eight = failing(8);
    expect(await limiter.run(1, eight.call, undefined, 8)).to.equal('ok');
    expect(eight.state.calls).to.equal(9);
    const byDefault = failing(6);
    expect(await limiter.run(1, byDefault.call).catch(() => 'gave up')).to.equal('gave up');
    expect(byDefault.state.calls).to.equal(6);
  });

  it('retries a request that timed out only once, other failures as often as allowed, and tells every retry', async () => {
    const limiter = new RateLimiter({ maxRetries: 5 }, { sleep: async () => undefined });
    const notices: RetryNotice[] = [];
    const stop = onLlmRetry((notice) => notices.push(notice));
    try {
      let calls = 0;
      const hung = async (): Promise<{ value: string; tokens: number }> => {
        calls++;
        throw networkFailure('ollama', 'no answer from http://gpu1:11434 within 1000 ms', undefined, {
          timedOut: true,
        });
      };
      const error = await limiter.run(1, hung).catch((e: unknown) => e);
      expect((error as Error).message).to.equal('ollama: no answer from http://gpu1:11434 within 1000 ms');
      expect(calls).to.equal(1 + MAX_TIMEOUT_RETRIES);
      expect(notices.map((n) => [n.attempt, n.maxRetries])).to.deep.equal([[1, 5]]);
      expect(describeRetry(notices[0]!)).to.match(
        /^LLM request failed \(ollama: no answer from http:\/\/gpu1:11434 within 1000 ms\): try 2 of 6 in \d+\.\d s$/,
      );
      // a refused connection is no timeout: all five retries, each told
      notices.length = 0;
      calls = 0;
      const refused = async (): Promise<{ value: string; tokens: number }> => {
        calls++;
        throw networkFailure('ollama', 'http://gpu1:11434: connect ECONNREFUSED');
      };
      await limiter.run(1, refused).catch(() => undefined);
      expect(calls).to.equal(6);
      expect(notices.map((n) => n.attempt)).to.deep.equal([1, 2, 3, 4, 5]);
    } finally {
      stop();
    }
    // no longer listening: nothing more is told
    const before = notices.length;
    await limiter
      .run(
        1,
        async () => {
          throw networkFailure('ollama', 'reset');
        },
        undefined,
        1,
      )
      .catch(() => undefined);
    expect(notices.length).to.equal(before);
  });
});
