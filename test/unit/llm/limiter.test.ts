import { expect } from 'chai';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { RateLimiter } from '../../../src/llm/limiter.js';

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
});
