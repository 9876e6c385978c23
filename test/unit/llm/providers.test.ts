import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { CpeError, ErrorCodes } from '../../../src/errors.js';
import {
  ask,
  forEachItem,
  type LlmStepConfig,
  LlmTally,
  makeAsker,
} from '../../../src/knowledge/llm-step.js';
import { AnthropicBackend } from '../../../src/llm/anthropic.js';
import { RateLimiter } from '../../../src/llm/limiter.js';
import { OllamaChatBackend } from '../../../src/llm/ollama-chat.js';
import { StructuredLlmClient } from '../../../src/llm/structured.js';
import type { ChatBackend } from '../../../src/llm/types.js';
import { type AnthropicTestServer, startAnthropicServer } from '../../servers/anthropic-server.js';
import { type OllamaChatTestServer, startOllamaChatServer } from '../../servers/ollama-chat.js';

const ENTITY_SCHEMA = {
  type: 'object',
  properties: {
    entities: {
      type: 'array',
      maxItems: 10,
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', minLength: 1 },
          type: { type: 'string', enum: ['PERSON', 'CONCEPT'] },
          description: { type: 'string' },
        },
        required: ['name', 'type', 'description'],
        additionalProperties: false,
      },
    },
  },
  required: ['entities'],
  additionalProperties: false,
};

const prompt = (text: string) => `Finde Entitäten.\n\n<text>\n${text}\n</text>`;

interface Entities {
  entities: Array<{ name: string; type: string; description: string }>;
}

/** A client whose backoff sleeps are recorded instead of waited (no timing in tests). */
function clientOver(backend: ChatBackend, maxRetries = 3) {
  const delays: number[] = [];
  let clock = 1_000_000;
  const limiter = new RateLimiter(
    { maxRetries },
    {
      now: () => clock,
      sleep: async (ms) => {
        delays.push(ms);
        clock += ms;
      },
    },
  );
  return { client: new StructuredLlmClient(backend, limiter, undefined), delays };
}

/**
 * A proxy gone wrong: answers 200 with each of `answers` (content type and body) in turn, then with a valid
 * message. Its URL carries a user and password, as a proxy's may.
 */
async function startBrokenProxy(answers: Array<[string, string]>) {
  const queue = [...answers];
  let requests = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      requests++;
      const [type, body] = queue.shift() ?? [
        'application/json',
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: '{"entities":[]}' }],
          stop_reason: 'end_turn',
          usage: { input_tokens: 5, output_tokens: 3 },
        }),
      ];
      res.writeHead(200, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://proxy:geheim@127.0.0.1:${port}`,
    shown: `http://proxy:***@127.0.0.1:${port}/`,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('LLM providers over HTTP (test servers)', () => {
  describe('Anthropic Messages API', () => {
    let server: AnthropicTestServer;
    beforeEach(async () => {
      server = await startAnthropicServer();
    });
    afterEach(() => server.close());

    const backend = (timeoutMs?: number) =>
      new AnthropicBackend({ apiKey: 'test-key', baseUrl: server.url, model: 'claude-test', timeoutMs });

    it('asks for structured output with the JSON schema and returns the validated answer with usage', async () => {
      const { client } = clientOver(backend());
      const result = await client.generate<Entities>({
        system: 'System',
        prompt: prompt('Die Ausbilderin prüft den Ausbildungsplan.'),
        schema: ENTITY_SCHEMA,
        schemaName: 'entities',
        maxTokens: 500,
      });
      expect(result.value.entities.map((e) => e.name)).to.deep.equal(['Ausbilderin', 'Ausbildungsplan']);
      expect(result).to.include({
        cached: false,
        repaired: false,
        provider: 'anthropic',
        model: 'claude-test',
      });
      expect(result.tokensIn).to.equal(server.counters.tokensIn);
      expect(result.tokensOut).to.equal(server.counters.tokensOut);
      const sent = server.bodies[0];
      expect(sent.output_config.format.type).to.equal('json_schema');
      expect(sent.output_config.format.schema.properties.entities.type).to.equal('array');
      expect(sent).to.include({ model: 'claude-test', max_tokens: 500, system: 'System' });
    });

    it('waits out a 429 for the Retry-After the server gave, then succeeds', async () => {
      server.faults.failNext(1, 429, 7);
      const { client, delays } = clientOver(backend());
      const result = await client.generate<Entities>({
        prompt: prompt('Die Kammer.'),
        schema: ENTITY_SCHEMA,
        schemaName: 'e',
      });
      expect(result.value.entities[0]!.name).to.equal('Kammer');
      expect(delays).to.deep.equal([7000]);
      expect(server.counters).to.include({ faults: 1, answered: 1 });
    });

    it('retries 529 overloaded and 500 with backoff', async () => {
      server.faults.failNext(1, 529);
      server.faults.failNext(1, 500);
      const { client, delays } = clientOver(backend());
      await client.generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'e' });
      expect(delays).to.have.length(2);
      expect(server.counters).to.include({ faults: 2, answered: 1 });
    });

    it('gives up after maxRetries with a retryable provider error', async () => {
      server.faults.failNext(5, 529);
      const { client, delays } = clientOver(backend(), 2);
      const error = await client
        .generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'e' })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(CpeError);
      expect((error as CpeError).retryable).to.equal(true);
      expect((error as CpeError).message).to.contain('529');
      expect(delays).to.have.length(2);
      expect(server.counters.requests).to.equal(3);
    });

    it('does not retry a 400 (permanent)', async () => {
      server.faults.failNext(1, 400);
      const { client, delays } = clientOver(backend());
      const error = (await client
        .generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'e' })
        .catch((e: unknown) => e)) as CpeError;
      expect(error.retryable).to.equal(false);
      expect(delays).to.deep.equal([]);
      expect(server.counters.requests).to.equal(1);
    });

    it('retries a request that timed out', async () => {
      server.faults.stallNext(1, 3000);
      const { client, delays } = clientOver(backend(300));
      const result = await client.generate<Entities>({
        prompt: prompt('Die Kammer.'),
        schema: ENTITY_SCHEMA,
        schemaName: 'e',
      });
      expect(result.value.entities).to.have.length(1);
      expect(delays).to.have.length(1);
      expect(server.counters.answered).to.equal(1);
    });

    it('retries an answer that is not a message (a page, JSON cut off or without content), naming the endpoint', async () => {
      const key = 'sk-ant-test-key-123';
      const cases: Array<[string, string, string]> = [
        [
          'text/html',
          `<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>x-api-key: ${key}</body></html>`,
          'the answer is not JSON: <!DOCTYPE html><html><head><title>502 Bad Gateway</title>',
        ],
        ['application/json', '{"id":"msg_1","type":"message","content":[{"type"', 'the answer is not JSON ('],
        [
          'application/json',
          '{"id":"msg_1","type":"message","role":"assistant"}',
          'the answer has no content: {"id"',
        ],
      ];
      for (const [type, body, said] of cases) {
        const proxy = await startBrokenProxy([
          [type, body],
          [type, body],
        ]);
        try {
          const broken = new AnthropicBackend({ apiKey: key, baseUrl: proxy.url, model: 'claude-test' });
          const { client, delays } = clientOver(broken, 1);
          const error = (await client
            .generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'e' })
            .catch((e: unknown) => e)) as CpeError;
          expect(error, said).to.be.instanceOf(CpeError);
          expect(error.code).to.equal(ErrorCodes.PROVIDER_ERROR);
          expect(error.retryable).to.equal(true);
          const start = `anthropic: ${proxy.shown}: ${said}`;
          expect(error.message.slice(0, start.length)).to.equal(start);
          expect(error.message).to.not.contain(key).and.not.contain('geheim');
          expect(delays).to.have.length(1);
          expect(proxy.requests()).to.equal(2);
        } finally {
          await proxy.close();
        }
      }
    });

    it('gets the message on the retry after an answer that was not one', async () => {
      const proxy = await startBrokenProxy([['text/html', '<html>Service Unavailable</html>']]);
      try {
        const broken = new AnthropicBackend({ apiKey: 'test-key', baseUrl: proxy.url, model: 'claude-test' });
        const { client, delays } = clientOver(broken);
        const result = await client.generate<Entities>({
          prompt: prompt('Die Kammer.'),
          schema: ENTITY_SCHEMA,
          schemaName: 'e',
        });
        expect(result.value).to.deep.equal({ entities: [] });
        expect(result).to.include({ tokensIn: 5, tokensOut: 3 });
        expect(delays).to.have.length(1);
      } finally {
        await proxy.close();
      }
    });

    it('repairs an invalid answer once, showing the model the validation errors', async () => {
      server.faults.invalidRate = 1;
      const { client } = clientOver(backend());
      const result = await client.generate<Entities>({
        prompt: prompt('Die Kammer.'),
        schema: ENTITY_SCHEMA,
        schemaName: 'e',
      });
      expect(result.repaired).to.equal(true);
      expect(result.value.entities[0]!.name).to.equal('Kammer');
      expect(server.counters).to.include({ answered: 2, repairs: 1, invalidAnswers: 1 });
      const repair = server.bodies[1];
      expect(repair.messages.map((m: any) => m.role)).to.deep.equal(['user', 'assistant', 'user']);
      expect(JSON.stringify(repair.messages[2])).to.contain('JSON-Schema');
      expect(result.tokensIn).to.equal(server.counters.tokensIn);
    });

    it('fails with INVALID_ANSWER and the raw answer when the repair is invalid too', async () => {
      server.faults.alwaysInvalid = true;
      const { client } = clientOver(backend());
      const error = (await client
        .generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'entities' })
        .catch((e: unknown) => e)) as CpeError;
      expect(error.code).to.equal(ErrorCodes.INVALID_ANSWER);
      expect(error.retryable).to.equal(false);
      expect(error.details.raw).to.be.a('string').and.not.equal('');
      expect(server.counters.answered).to.equal(2);
    });

    it('does not repair an answer cut off at max_tokens or declined: the error says which', async () => {
      const { client } = clientOver(backend());
      for (const [stop, said] of [
        ['max_tokens', 'was cut off at max_tokens 300; a larger max_tokens'],
        ['refusal', 'the model declined to answer (entities)'],
      ] as const) {
        server.faults.endNext(1, stop);
        const before = server.counters.answered;
        const error = (await client
          .generate({
            prompt: prompt(`Die Kammer ${stop}.`),
            schema: ENTITY_SCHEMA,
            schemaName: 'entities',
            maxTokens: 300,
          })
          .catch((e: unknown) => e)) as CpeError;
        expect(error.code).to.equal(ErrorCodes.INVALID_ANSWER);
        expect(error.message).to.contain(said);
        expect(error.retryable).to.equal(false);
        expect(server.counters.answered - before).to.equal(1); // no repair call
      }
    });

    it("fails a step's items cut off or declined with the first one's reason, claiming no repair", async () => {
      server.faults.endNext(1, 'max_tokens');
      server.faults.endNext(1, 'refusal');
      const { client } = clientOver(backend());
      const config = { max_tokens: 300, concurrency: 1, max_failed_items: 0 } as LlmStepConfig;
      const asker = makeAsker(client, config, '');
      const logged: string[] = [];
      const log = { debug() {}, info() {}, warn() {}, error: (message: string) => logged.push(message) };
      const error = (await forEachItem(
        { log, signal: new AbortController().signal },
        asker,
        ['Die Kammer.', 'Der Betrieb.'],
        (text) => ({ text }),
        (text) => ask(asker, { prompt: prompt(text), schema: ENTITY_SCHEMA, schemaName: 'entities' }),
      ).catch((e: unknown) => e)) as CpeError;
      expect(error.code).to.equal(ErrorCodes.INVALID_ANSWER);
      expect(error.message).to.equal(
        '2 of 2 items got no valid LLM answer (max_failed_items: 0); nothing was written. First failure: ' +
          "anthropic/claude-test: the answer (entities) was cut off at max_tokens 300; a larger max_tokens in the step's config lets it finish",
      );
      expect(logged).to.have.length(2);
      expect(logged[1]).to.contain('the model declined to answer (entities)');
      expect(server.counters.answered).to.equal(2); // no repair
    });

    it('counts a repair cut off at max_tokens with the first answer: every call of the request is billed', async () => {
      server.faults.invalidRate = 1; // the first answer is not valid: a repair follows
      server.faults.endNext(0, 'max_tokens');
      const { client } = clientOver(backend());
      // the repair (the second answer) is cut off
      const original = server.faults.answerText.bind(server.faults);
      let calls = 0;
      server.faults.answerText = ((...args: Parameters<typeof original>) => {
        if (++calls === 2) server.faults.endNext(1, 'max_tokens');
        return original(...args);
      }) as typeof original;
      const error = (await client
        .generate({ prompt: prompt('Die Kammer prüft.'), schema: ENTITY_SCHEMA, schemaName: 'entities' })
        .catch((e: unknown) => e)) as CpeError;
      expect(error.code).to.equal(ErrorCodes.INVALID_ANSWER);
      expect(server.counters.answered).to.equal(2);
      expect(error.details).to.include({
        tokensIn: server.counters.tokensIn,
        tokensOut: server.counters.tokensOut,
      });
    });

    it('bills the first answer when its repair call fails', async () => {
      server.faults.invalidRate = 1;
      const original = server.faults.answerText.bind(server.faults);
      let calls = 0;
      server.faults.answerText = ((...args: Parameters<typeof original>) => {
        if (++calls === 1) server.faults.failNext(1, 500);
        return original(...args);
      }) as typeof original;
      const { client } = clientOver(backend(), 0);
      const error = (await client
        .generate({ prompt: prompt('Die Kammer prüft.'), schema: ENTITY_SCHEMA, schemaName: 'entities' })
        .catch((e: unknown) => e)) as CpeError;
      expect(error.code).to.not.equal(ErrorCodes.INVALID_ANSWER);
      expect(server.counters.answered).to.equal(1);
      expect(error.details).to.include({
        tokensIn: server.counters.tokensIn,
        tokensOut: server.counters.tokensOut,
      });
    });

    it('sends one request for callers asking the same at once: its tokens billed once, one caller cancelling alone', async () => {
      server.faults.stallNext(1, 300);
      const { client } = clientOver(backend(5000));
      const ask = (signal?: AbortSignal) =>
        client.generate<Entities>({
          prompt: prompt('Die Kammer.'),
          schema: ENTITY_SCHEMA,
          schemaName: 'e',
          signal,
        });
      const quitter = new AbortController();
      const a = ask(quitter.signal).catch((e: unknown) => (e as CpeError).code);
      const b = ask();
      const c = ask(new AbortController().signal);
      setTimeout(() => quitter.abort(), 30);
      expect(await a).to.equal(ErrorCodes.CANCELLED);
      const [second, third] = await Promise.all([b, c]);
      expect(server.counters.answered).to.equal(1);
      expect(second.value.entities[0]!.name).to.equal('Kammer');
      expect(second.tokensIn + third.tokensIn).to.equal(server.counters.tokensIn);
      expect([second.cached, third.cached].sort()).to.deep.equal([false, true]);
    });

    it('bills a failed request shared by two callers once: to one of them with its repair, to the other as a cache hit', async () => {
      server.faults.alwaysInvalid = true; // the answer and its repair: invalid
      server.faults.stallNext(1, 300); // both callers ask while the first answer is on its way
      const { client } = clientOver(backend(1000));
      const config = { max_tokens: 500 } as LlmStepConfig;
      const tallies = [new LlmTally(), new LlmTally()];
      const errors = await Promise.all(
        tallies.map((tally) =>
          ask(makeAsker(client, config, '', tally), {
            prompt: prompt('Die Kammer prüft.'),
            schema: ENTITY_SCHEMA,
            schemaName: 'entities',
          }).catch((e: unknown) => e as CpeError),
        ),
      );
      expect(server.counters.answered).to.equal(2); // one request: the answer and its repair
      expect(errors.map((e) => (e as CpeError).code)).to.deep.equal([
        ErrorCodes.INVALID_ANSWER,
        ErrorCodes.INVALID_ANSWER,
      ]);
      const counts = tallies.map((t) => t.counts());
      expect(counts[0]!.tokensIn + counts[1]!.tokensIn).to.equal(server.counters.tokensIn);
      expect(counts[0]!.tokensOut + counts[1]!.tokensOut).to.equal(server.counters.tokensOut);
      expect(counts.map((c) => [c.llmCalls, c.llmRepaired, c.llmCached])).to.have.deep.members([
        [1, 1, 0],
        [0, 0, 1],
      ]);
    });

    it('sends images as base64 image blocks', async () => {
      const { client } = clientOver(backend());
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
      await client.generate({
        prompt: prompt('Die Grafik.'),
        schema: ENTITY_SCHEMA,
        schemaName: 'e',
        images: [png],
      });
      const block = server.bodies[0].messages[0].content[0];
      expect(block.type).to.equal('image');
      expect(block.source).to.deep.equal({
        type: 'base64',
        media_type: 'image/png',
        data: Buffer.from(png).toString('base64'),
      });
    });
  });

  describe('Ollama chat API', () => {
    let server: OllamaChatTestServer;
    beforeEach(async () => {
      server = await startOllamaChatServer(['llama-test']);
    });
    afterEach(() => server.close());

    const backend = (model = 'llama-test') => new OllamaChatBackend({ hosts: [server.url], model });

    it('sends format=<schema>, stream:false and returns the validated answer with token counts', async () => {
      const { client } = clientOver(backend());
      const result = await client.generate<Entities>({
        system: 'System',
        prompt: prompt('Der Betriebsrat berät die Kündigung.'),
        schema: ENTITY_SCHEMA,
        schemaName: 'entities',
      });
      expect(result.value.entities.map((e) => e.name)).to.deep.equal(['Betriebsrat', 'Kündigung']);
      expect(result.provider).to.equal('ollama');
      const sent = server.state.bodies[0];
      expect(sent.stream).to.equal(false);
      expect(sent.format).to.deep.equal(ENTITY_SCHEMA);
      expect(sent.messages[0]).to.deep.equal({ role: 'system', content: 'System' });
      expect(result.tokensIn).to.equal(server.state.counters.tokensIn);
    });

    it('does not repair an answer cut off at num_predict (done_reason "length")', async () => {
      const { client } = clientOver(backend());
      server.state.faults.endNext(1, 'max_tokens');
      const error = (await client
        .generate({
          prompt: prompt('Die Kammer.'),
          schema: ENTITY_SCHEMA,
          schemaName: 'entities',
          maxTokens: 200,
        })
        .catch((e: unknown) => e)) as CpeError;
      expect(error.message).to.contain('was cut off at max_tokens 200');
      expect(server.state.counters.answered).to.equal(1);
    });

    it('honours Retry-After on 429 and retries 503', async () => {
      server.state.faults.failNext(1, 429, 2);
      server.state.faults.failNext(1, 503);
      const { client, delays } = clientOver(backend());
      await client.generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'e' });
      expect(delays[0]).to.equal(2000);
      expect(delays).to.have.length(2);
      expect(server.state.counters.answered).to.equal(1);
    });

    it('reports a missing model as a permanent error naming the model', async () => {
      const { client, delays } = clientOver(backend('nope:1b'));
      const error = (await client
        .generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'e' })
        .catch((e: unknown) => e)) as CpeError;
      expect(error.retryable).to.equal(false);
      expect(error.message).to.contain('nope:1b');
      expect(delays).to.deep.equal([]);
    });

    it('retries a refused connection (server down) and fails retryable at the end', async () => {
      const url = server.url;
      await server.close();
      const { client, delays } = clientOver(new OllamaChatBackend({ hosts: [url], model: 'llama-test' }), 1);
      const error = (await client
        .generate({ prompt: prompt('Die Kammer.'), schema: ENTITY_SCHEMA, schemaName: 'e' })
        .catch((e: unknown) => e)) as CpeError;
      expect(error.retryable).to.equal(true);
      expect(delays).to.have.length(1);
      server = await startOllamaChatServer();
    });

    it('sends images base64-encoded in the message', async () => {
      const { client } = clientOver(backend());
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 9]);
      await client.generate({
        prompt: prompt('Die Grafik.'),
        schema: ENTITY_SCHEMA,
        schemaName: 'e',
        images: [png],
      });
      expect(server.state.bodies[0].messages[0].images).to.deep.equal([Buffer.from(png).toString('base64')]);
    });
  });
});
