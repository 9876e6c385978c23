/**
 * Ollama's chat API for tests: `POST /api/chat` with `format: <JSON schema>` and `stream: false`, answers
 * derived from the prompt (llm-answers.ts), `prompt_eval_count`/`eval_count`, and the same fault modes as the
 * Anthropic test server. Exported as a route (`handleOllamaChat`) so another Ollama test server can mount it,
 * and as a standalone server (`startOllamaChatServer`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FakeMessage, FaultPlan, newCounters, type ServerCounters, tokensOf } from './llm-answers.js';

export interface OllamaChatState {
  counters: ServerCounters;
  faults: FaultPlan;
  /** request bodies received */
  bodies: any[];
  /** models the server "has"; others get 404 like a real Ollama without the model (empty = any) */
  models: string[];
}

export const newOllamaChatState = (models: string[] = []): OllamaChatState => ({
  counters: newCounters(),
  faults: new FaultPlan(),
  bodies: [],
  models,
});

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

/**
 * Handles `POST /api/chat`; returns false for other routes so a host server can try its own.
 * `rawBody` is the request body already read by the host server.
 */
export async function handleOllamaChat(
  state: OllamaChatState,
  req: IncomingMessage,
  res: ServerResponse,
  rawBody: string,
): Promise<boolean> {
  if (req.method !== 'POST' || req.url !== '/api/chat') return false;
  const { counters, faults } = state;
  counters.requests++;
  const fault = faults.takeFault();
  if (fault) {
    counters.faults++;
    if (fault.stallMs) {
      await new Promise((resolve) => setTimeout(resolve, fault.stallMs));
      if (res.destroyed || req.destroyed) return true;
    } else {
      const headers: Record<string, string> = {};
      if (fault.retryAfterSeconds !== undefined) headers['retry-after'] = String(fault.retryAfterSeconds);
      send(res, fault.status, { error: `test fault ${fault.status}` }, headers);
      return true;
    }
  }
  let body: any;
  try {
    body = JSON.parse(rawBody);
  } catch {
    send(res, 400, { error: 'invalid JSON body' });
    return true;
  }
  state.bodies.push(body);
  if (state.models.length > 0 && !state.models.includes(body.model)) {
    send(res, 404, { error: `model "${body.model}" not found, try pulling it first` });
    return true;
  }
  if (body.stream !== false || typeof body.format !== 'object' || body.format === null) {
    send(res, 400, { error: 'this test server answers only stream:false with a JSON schema format' });
    return true;
  }
  const all: FakeMessage[] = (body.messages ?? []).map((m: any) => ({
    role: m.role,
    text: String(m.content ?? ''),
    images: Array.isArray(m.images) ? m.images.length : 0,
  }));
  const system = all
    .filter((m) => m.role === 'system')
    .map((m) => m.text)
    .join('\n');
  const messages = all.filter((m) => m.role !== 'system');
  const { text, invalid, stop } = faults.answerText(body.format, messages);
  const tokensIn =
    tokensOf(system + messages.map((m) => m.text).join('\n')) +
    messages.reduce((n, m) => n + m.images * 600, 0);
  const tokensOut = tokensOf(text);
  counters.answered++;
  if (messages.some((m) => m.role === 'assistant')) counters.repairs++;
  if (invalid) counters.invalidAnswers++;
  counters.tokensIn += tokensIn;
  counters.tokensOut += tokensOut;
  send(res, 200, {
    model: body.model,
    created_at: new Date().toISOString(),
    message: { role: 'assistant', content: text },
    done: true,
    done_reason: stop === 'max_tokens' ? 'length' : 'stop',
    total_duration: 1000,
    load_duration: 10,
    prompt_eval_count: tokensIn,
    prompt_eval_duration: 100,
    eval_count: tokensOut,
    eval_duration: 100,
  });
  return true;
}

export interface OllamaChatTestServer {
  url: string;
  state: OllamaChatState;
  close(): Promise<void>;
}

/** A standalone server with only the chat route. */
export async function startOllamaChatServer(models: string[] = []): Promise<OllamaChatTestServer> {
  const state = newOllamaChatState(models);
  const server: Server = createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const handled = await handleOllamaChat(state, req, res, Buffer.concat(parts).toString('utf8'));
    if (!handled) send(res, 404, { error: `no route ${req.method} ${req.url}` });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
