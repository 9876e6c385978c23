/**
 * A small HTTP server that speaks the Anthropic Messages API (`POST /v1/messages`) as the real SDK sends it:
 * structured output via `output_config.format` (json_schema), answers derived from the prompt
 * (see llm-answers.ts), usage figures, and fault modes: invalid answers, 429 with Retry-After, 529
 * overloaded, 5xx, stalls. Point the SDK at it with `baseURL`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeMessage, FaultPlan, newCounters, type ServerCounters, tokensOf } from './llm-answers.js';

export interface AnthropicTestServer {
  url: string;
  counters: ServerCounters;
  faults: FaultPlan;
  /** request bodies received (for asserting what the client sent) */
  bodies: any[];
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function messagesOf(body: any): FakeMessage[] {
  return (body.messages ?? []).map((m: any) => {
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content ?? []);
    return {
      role: m.role,
      text: blocks
        .filter((b: any) => b.type === 'text')
        .map((b: any) => b.text)
        .join('\n'),
      images: blocks.filter((b: any) => b.type === 'image').length,
    };
  });
}

export async function startAnthropicServer(): Promise<AnthropicTestServer> {
  const counters = newCounters();
  const faults = new FaultPlan();
  const bodies: any[] = [];
  let nextId = 1;

  const server: Server = createServer(async (req, res) => {
    counters.requests++;
    const raw = await readBody(req);
    if (req.method !== 'POST' || !req.url?.startsWith('/v1/messages')) {
      send(res, 404, {
        type: 'error',
        error: { type: 'not_found_error', message: `no route ${req.method} ${req.url}` },
      });
      return;
    }
    // SDK 1.x sends the key as a bearer token; older ones as x-api-key
    if (!req.headers['x-api-key'] && !req.headers.authorization?.startsWith('Bearer ')) {
      send(res, 401, {
        type: 'error',
        error: { type: 'authentication_error', message: 'an API key is required' },
      });
      return;
    }
    const fault = faults.takeFault();
    if (fault) {
      counters.faults++;
      if (fault.stallMs) {
        await new Promise((resolve) => setTimeout(resolve, fault.stallMs));
        if (res.destroyed || req.destroyed) return;
      } else {
        const headers: Record<string, string> = {};
        if (fault.retryAfterSeconds !== undefined) headers['retry-after'] = String(fault.retryAfterSeconds);
        send(
          res,
          fault.status,
          {
            type: 'error',
            error: { type: ERROR_TYPES[fault.status] ?? 'api_error', message: `test fault ${fault.status}` },
          },
          headers,
        );
        return;
      }
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      send(res, 400, {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'body is not JSON' },
      });
      return;
    }
    bodies.push(body);
    const format = body.output_config?.format;
    if (!body.model || !body.max_tokens || !Array.isArray(body.messages) || format?.type !== 'json_schema') {
      send(res, 400, {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'model, max_tokens, messages and output_config.format (json_schema) are required',
        },
      });
      return;
    }
    const messages = messagesOf(body);
    const { text, invalid, stop } = faults.answerText(format.schema, messages);
    const system = typeof body.system === 'string' ? body.system : '';
    const tokensIn =
      tokensOf(system + messages.map((m) => m.text).join('\n')) +
      messages.reduce((n, m) => n + m.images * 800, 0);
    const tokensOut = tokensOf(text);
    counters.answered++;
    if (messages.some((m) => m.role === 'assistant')) counters.repairs++;
    if (invalid) counters.invalidAnswers++;
    counters.tokensIn += tokensIn;
    counters.tokensOut += tokensOut;
    send(res, 200, {
      id: `msg_test_${nextId++}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [{ type: 'text', text }],
      stop_reason: stop ?? 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: tokensIn, output_tokens: tokensOut },
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counters,
    faults,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
