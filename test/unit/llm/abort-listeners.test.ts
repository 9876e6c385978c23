import { getEventListeners } from 'node:events';
import { expect } from 'chai';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import { RateLimiter } from '../../../src/llm/limiter.js';
import { StructuredLlmClient } from '../../../src/llm/structured.js';
import type { ChatBackend, ChatRequest } from '../../../src/llm/types.js';

const SCHEMA = {
  type: 'object',
  properties: { summary: { type: 'string' } },
  required: ['summary'],
  additionalProperties: false,
};

/** A chat backend that answers each request after `ms`, or fails it when the request's signal aborts. */
function slowBackend(ms: number) {
  const aborted: string[] = [];
  const backend: ChatBackend = {
    provider: 'anthropic',
    model: 'claude-test',
    endpointKey: 'anthropic:test',
    chat: (request: ChatRequest) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => resolve({ text: JSON.stringify({ summary: 'kurz' }), tokensIn: 10, tokensOut: 2 }),
          ms,
        );
        request.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          aborted.push(request.messages[0]!.text);
          reject(new CpeError(ErrorCodes.CANCELLED, 'aborted'));
        });
      }),
  };
  return { backend, aborted };
}

describe("many answers asked for at once with a step's one signal", () => {
  const PARTS = 25;
  let warnings: string[];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  beforeEach(() => {
    warnings = [];
    process.on('warning', onWarning);
  });
  afterEach(() => {
    process.off('warning', onWarning);
  });

  const askAll = (client: StructuredLlmClient, signal: AbortSignal) =>
    Array.from({ length: PARTS }, (_, i) =>
      client.generate({ prompt: `Teil ${i}`, schema: SCHEMA, schemaName: 'summary', signal }),
    );

  it('listen for its abort once, not once each (Node warned of a leak past ten listeners)', async () => {
    const { backend } = slowBackend(5);
    const client = new StructuredLlmClient(backend, new RateLimiter({ concurrency: 4 }), undefined);
    const step = new AbortController();
    const answers = askAll(client, step.signal);
    expect(getEventListeners(step.signal, 'abort')).to.have.length(1);
    expect((await Promise.all(answers)).map((a) => a.value)).to.deep.equal(
      new Array(PARTS).fill({ summary: 'kurz' }),
    );
    expect(getEventListeners(step.signal, 'abort')).to.have.length(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).to.deep.equal([]);
  });

  it('are all cancelled when it aborts, and the requests on their way are aborted', async () => {
    const { backend, aborted } = slowBackend(60_000);
    const client = new StructuredLlmClient(backend, new RateLimiter({ concurrency: 4 }), undefined);
    const step = new AbortController();
    const answers = askAll(client, step.signal).map((a) => a.catch((e: unknown) => (e as CpeError).code));
    await new Promise((resolve) => setTimeout(resolve, 20));
    step.abort();
    expect(await Promise.all(answers)).to.deep.equal(new Array(PARTS).fill(ErrorCodes.CANCELLED));
    // the four the limiter let through were on their way
    expect(aborted.sort()).to.deep.equal(['Teil 0', 'Teil 1', 'Teil 2', 'Teil 3']);
    expect(getEventListeners(step.signal, 'abort')).to.have.length(0);
  });
});
