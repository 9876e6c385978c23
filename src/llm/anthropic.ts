import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import { transformJSONSchema } from '@anthropic-ai/sdk/lib/transform-json-schema';
import { CpeError, ErrorCodes } from '../errors.js';
import { fetchWithUrlCredentials, maskUrl, redactCredentials } from '../util/credentials.js';
import { httpFailure, malformedAnswer, networkFailure, parseRetryAfter } from './provider-errors.js';
import type { ChatAnswer, ChatBackend, ChatRequest } from './types.js';

/** A current Claude model with structured outputs, not on the SDK's deprecation list (1.14); steps choose another with `model`. */
export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-4-6';

export interface AnthropicBackendOptions {
  apiKey: string;
  model: string;
  /** e.g. a test server; default the SDK's (https://api.anthropic.com) */
  baseUrl?: string;
  /** per request, milliseconds (default 120 s) */
  timeoutMs?: number;
}

/** Detects PNG/JPEG/GIF/WebP by magic bytes; Claude needs the media type spelled out. */
function imageMediaType(bytes: Uint8Array): 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp' {
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'image/jpeg';
  if (bytes[0] === 0x47 && bytes[1] === 0x49 && bytes[2] === 0x46) return 'image/gif';
  if (bytes[0] === 0x52 && bytes[1] === 0x49 && bytes[2] === 0x46 && bytes[8] === 0x57) return 'image/webp';
  return 'image/png';
}

/**
 * Claude over the Messages API with structured output (`output_config.format` = json_schema). The SDK's own
 * retries are off (maxRetries 0): the limiter retries every provider the same way, honours Retry-After and
 * pauses the whole endpoint on a 429 instead of letting each request hammer on its own.
 */
export class AnthropicBackend implements ChatBackend {
  readonly provider = 'anthropic' as const;
  readonly model: string;
  readonly endpointKey: string;
  private readonly client: Anthropic;
  /** the base URL as errors name it: its password masked */
  private readonly endpoint: string;
  private readonly apiKey: string;

  constructor(options: AnthropicBackendOptions) {
    this.model = options.model;
    this.endpointKey = `anthropic:${options.baseUrl ?? 'https://api.anthropic.com'}`;
    this.endpoint = maskUrl(options.baseUrl ?? 'https://api.anthropic.com');
    this.apiKey = options.apiKey;
    this.client = new Anthropic({
      apiKey: options.apiKey,
      baseURL: options.baseUrl,
      maxRetries: 0,
      timeout: options.timeoutMs ?? 120_000,
      // a proxy URL with user and password: sent as Basic authorization, as fetch takes no credentials in URLs
      fetch: fetchWithUrlCredentials(),
    });
  }

  async chat(request: ChatRequest): Promise<ChatAnswer> {
    const messages: Anthropic.MessageParam[] = request.messages.map((m) => ({
      role: m.role,
      content: [
        ...(m.images ?? []).map(
          (image): Anthropic.ImageBlockParam => ({
            type: 'image',
            source: {
              type: 'base64',
              media_type: imageMediaType(image),
              data: Buffer.from(image).toString('base64'),
            },
          }),
        ),
        { type: 'text' as const, text: m.text },
      ],
    }));
    try {
      const message = await this.client.messages.create(
        {
          model: this.model,
          max_tokens: request.maxTokens,
          ...(request.system ? { system: request.system } : {}),
          messages,
          // Claude's structured outputs accept a subset of JSON Schema; the SDK's transform moves the rest
          // (maxItems, minimum, ...) into descriptions. ajv still checks the answer against the full schema.
          output_config: { format: { type: 'json_schema', schema: transformJSONSchema(request.schema) } },
        },
        { signal: request.signal },
      );
      // The SDK hands over whatever a 2xx answer held: a proxy's HTML page as text, JSON of another shape, nothing.
      // Read as a message it would fail with a TypeError that names neither the provider nor the endpoint.
      const wrong = notAMessage(message as unknown);
      if (wrong) throw malformedAnswer('anthropic', this.where(wrong));
      const text = message.content
        .filter((block): block is Anthropic.TextBlock => block?.type === 'text')
        .map((block) => block.text)
        .join('');
      const stop =
        message.stop_reason === 'max_tokens' || message.stop_reason === 'refusal'
          ? message.stop_reason
          : undefined;
      return {
        text,
        // a proxy's message without usage is still an answer: its tokens are not known, as with Ollama
        tokensIn: message.usage?.input_tokens ?? 0,
        tokensOut: message.usage?.output_tokens ?? 0,
        ...(stop ? { stop } : {}),
      };
    } catch (error) {
      throw toCpeError(error, request.signal, (problem) => this.where(problem));
    }
  }

  /**
   * A problem with an answer, prefixed with the endpoint, and with this backend's key masked in the excerpt of the
   * answer it quotes, should a proxy's page echo the request's headers.
   */
  private where(problem: string): string {
    // a key of 1-3 characters (a test's) is left alone: masking it would mask pieces of ordinary words
    const masked = this.apiKey.length >= 4 ? problem.split(this.apiKey).join('***') : problem;
    return `${this.endpoint}: ${redactCredentials(masked)}`;
  }
}

/** How much of an unreadable answer an error quotes: enough for a proxy's page title or an error's JSON. */
const EXCERPT_LIMIT = 200;

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > EXCERPT_LIMIT ? `${flat.slice(0, EXCERPT_LIMIT)}…` : flat;
}

/** What is wrong with an answer that should be a Messages API message, or undefined when it is one. */
function notAMessage(answer: unknown): string | undefined {
  if (answer === undefined || answer === null || answer === '') return 'the answer is empty';
  if (typeof answer === 'string') return `the answer is not JSON: ${excerpt(answer)}`;
  if (typeof answer !== 'object' || !Array.isArray((answer as { content?: unknown }).content)) {
    return `the answer has no content: ${excerpt(JSON.stringify(answer) ?? String(answer))}`;
  }
  return undefined;
}

function toCpeError(
  error: unknown,
  signal: AbortSignal | undefined,
  where: (problem: string) => string,
): unknown {
  if (error instanceof APIUserAbortError || signal?.aborted) {
    return new CpeError(ErrorCodes.CANCELLED, 'anthropic: request cancelled', { cause: error });
  }
  // APIConnectionTimeoutError is a subclass of APIConnectionError: both mean "no answer", worth a retry (a timeout
  // fewer times: the limiter's MAX_TIMEOUT_RETRIES)
  if (error instanceof APIConnectionError)
    return networkFailure('anthropic', error.message, error, {
      timedOut: error instanceof APIConnectionTimeoutError,
    });
  if (error instanceof APIError && typeof error.status === 'number') {
    const message = error.apiMessage ?? error.message;
    return httpFailure('anthropic', error.status, message, parseRetryAfter(error.headers), error);
  }
  // the connection closed while the answer's body was read (undici: "terminated", "other side closed"): the SDK
  // reads the body after its own retries, so this reaches us raw; a retry may well get the whole answer
  if (
    error instanceof TypeError &&
    (error.message === 'terminated' || /socket|closed/i.test(String(error.cause)))
  )
    return networkFailure('anthropic', `the connection closed during the answer (${error.message})`, error);
  // response.json() on a body that is not JSON (cut off, or a page sent as application/json): the SDK parses
  // nothing else. JSON.parse's message quotes a few characters of the body, hence `where` and its masking.
  if (error instanceof SyntaxError)
    return malformedAnswer('anthropic', where(`the answer is not JSON (${error.message})`), error);
  return error;
}
