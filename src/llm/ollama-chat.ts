import { Ollama } from 'ollama';
import { CpeError, ErrorCodes } from '../errors.js';
import { fetchWithUrlCredentials, maskUrl } from '../util/credentials.js';
import { httpFailure, networkFailure, parseRetryAfter } from './provider-errors.js';
import type { ChatAnswer, ChatBackend, ChatRequest } from './types.js';

export const DEFAULT_OLLAMA_CHAT_MODEL = 'llama3.1:8b';
export const DEFAULT_OLLAMA_VISION_MODEL = 'llama3.2-vision:11b';

export interface OllamaChatOptions {
  /** one or more base URLs (http://host:11434); requests go round-robin */
  hosts: string[];
  model: string;
  /** per request, milliseconds (default 300 s: a local model may need to load first) */
  timeoutMs?: number;
}

/**
 * Ollama's /api/chat with `format: <JSON schema>` and `stream: false`. The ollama client has no per-request
 * signal or timeout and throws away the response headers, so each call gets a fetch wrapper that adds both
 * and remembers Retry-After.
 */
export class OllamaChatBackend implements ChatBackend {
  readonly provider = 'ollama' as const;
  readonly model: string;
  readonly endpointKey: string;
  private readonly hosts: string[];
  private readonly timeoutMs: number;
  private next = 0;

  constructor(options: OllamaChatOptions) {
    if (options.hosts.length === 0) throw new Error('OllamaChatBackend needs at least one host');
    this.hosts = options.hosts.map((h) => h.replace(/\/+$/, ''));
    this.model = options.model;
    this.timeoutMs = options.timeoutMs ?? 300_000;
    this.endpointKey = `ollama:${this.hosts.join(',')}`;
  }

  async chat(request: ChatRequest): Promise<ChatAnswer> {
    const host = this.hosts[this.next++ % this.hosts.length]!;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    let lastResponse: Response | undefined;
    const client = new Ollama({
      host,
      fetch: async (input: string | URL | Request, init?: RequestInit) => {
        lastResponse = await fetchWithUrlCredentials()(input, { ...init, signal });
        return lastResponse;
      },
    });
    const messages = [
      ...(request.system ? [{ role: 'system', content: request.system }] : []),
      ...request.messages.map((m) => ({
        role: m.role,
        content: m.text,
        ...(m.images?.length ? { images: m.images.map((img) => Buffer.from(img).toString('base64')) } : {}),
      })),
    ];
    try {
      const response = await client.chat({
        model: this.model,
        messages,
        format: request.schema,
        stream: false,
        // temperature 0: extraction wants the likeliest answer, and equal prompts should give equal answers
        options: { num_predict: request.maxTokens, temperature: 0 },
      });
      return {
        text: response.message?.content ?? '',
        tokensIn: response.prompt_eval_count ?? 0,
        tokensOut: response.eval_count ?? 0,
        // num_predict reached: the answer is cut off
        ...(response.done_reason === 'length' ? { stop: 'max_tokens' as const } : {}),
      };
    } catch (error) {
      if (request.signal?.aborted) {
        throw new CpeError(ErrorCodes.CANCELLED, 'ollama: request cancelled', { cause: error });
      }
      if (timeout.aborted) {
        throw networkFailure('ollama', `no answer from ${maskUrl(host)} within ${this.timeoutMs} ms`, error, {
          timedOut: true,
        });
      }
      const status = (error as { status_code?: unknown }).status_code;
      if (typeof status === 'number') {
        const message = error instanceof Error ? error.message : String(error);
        throw httpFailure(
          'ollama',
          status,
          `${maskUrl(host)}: ${message}`,
          parseRetryAfter(lastResponse?.headers),
          error,
        );
      }
      throw networkFailure(
        'ollama',
        `${maskUrl(host)}: ${error instanceof Error ? error.message : String(error)}`,
        error,
      );
    }
  }
}
