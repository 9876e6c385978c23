/**
 * The LLM surface the steps see. Every answer is requested against a JSON Schema and validated before a step
 * gets it; the client caches validated answers in SQL and applies the provider's rate limits.
 */
export type JsonSchema = Record<string, unknown>;

export type LlmProvider = 'anthropic' | 'ollama';

export interface GenerateRequest {
  system?: string;
  prompt: string;
  /** JSON Schema the answer must satisfy (sent to the provider and checked with ajv) */
  schema: JsonSchema;
  /** short name of the schema, e.g. 'entities' (cache bookkeeping and logs) */
  schemaName: string;
  /** PNG (or JPEG) bytes shown to the model with the prompt */
  images?: Uint8Array[];
  /** cap on the answer's tokens (default 2048) */
  maxTokens?: number;
  /**
   * 'caller': the answer is checked with the schema's limits relaxed (withoutLimits in structured.ts: its shape,
   * types, enums and required keys are still checked), and the caller holds it to them item by item
   * (knowledge/keep-items.ts: keepItems drops an item over a limit, cuts a list to its maxItems). The provider gets
   * the whole schema all the same. Claude's API enforces few limits (the SDK moves maxItems, minLength, maximum,
   * ... into descriptions): one item over one failed the whole answer, after a paid repair.
   */
  limits?: 'caller';
  /** retries of a retryable failure (429, 529, 5xx, network, timeout); default: the endpoint's maxRetries */
  maxRetries?: number;
  signal?: AbortSignal;
}

export interface GenerateResult<T> {
  value: T;
  /** tokens paid for by this call: 0 when the answer came from the cache */
  tokensIn: number;
  tokensOut: number;
  cached: boolean;
  /** true when the first answer was invalid and the repair attempt produced this one */
  repaired: boolean;
  model: string;
  provider: string;
}

/** Limits of one provider endpoint. */
export interface LimitSettings {
  /** requests in flight at once */
  concurrency: number;
  /** requests per minute (0 = unlimited) */
  requestsPerMinute: number;
  /** input + output tokens per minute (0 = unlimited) */
  tokensPerMinute: number;
  /**
   * retries of a retryable failure (429, 529, 5xx, network, timeout) before giving up, for a request that does not
   * say (GenerateRequest.maxRetries)
   */
  maxRetries: number;
}

/** The limits every step that talks to an endpoint shares (retries are each request's own). */
export type SharedLimits = Omit<LimitSettings, 'maxRetries'>;

export interface LlmClient {
  readonly provider: LlmProvider;
  readonly model: string;
  generate<T>(request: GenerateRequest): Promise<GenerateResult<T>>;
  /**
   * Tightens the provider's shared limits (the tightest value any step asks for wins, because the limits
   * protect one account / one server). Returns the same client.
   */
  withLimits(limits: Partial<SharedLimits>): LlmClient;
}

export interface DescribeImageRequest {
  image: Uint8Array;
  prompt: string;
  system?: string;
  maxTokens?: number;
  /** as GenerateRequest.maxRetries */
  maxRetries?: number;
  signal?: AbortSignal;
}

export interface ImageDescription {
  /** prose description of what the image shows (German by default) */
  description: string;
  /** what the page holds: 'diagram', 'table', 'photo', 'chart', 'screenshot', 'text', 'other' */
  contents: string[];
  /** text read off the image, when any */
  visibleText: string;
}

export interface VisionClient {
  readonly provider: LlmProvider;
  readonly model: string;
  describe(request: DescribeImageRequest): Promise<GenerateResult<ImageDescription>>;
  withLimits(limits: Partial<SharedLimits>): VisionClient;
}

export type LlmResolution = { llm: LlmClient; reason?: undefined } | { llm: undefined; reason: string };

export type VisionResolution =
  | { vision: VisionClient; reason?: undefined }
  | { vision: undefined; reason: string };

/** One message of a chat sent to a backend (the structured-output layer builds these). */
export interface ChatMessage {
  role: 'user' | 'assistant';
  text: string;
  images?: Uint8Array[];
}

export interface ChatRequest {
  system?: string;
  messages: ChatMessage[];
  schema: JsonSchema;
  schemaName: string;
  maxTokens: number;
  signal?: AbortSignal;
}

export interface ChatAnswer {
  /** the raw text of the answer (JSON when the model behaved) */
  text: string;
  tokensIn: number;
  tokensOut: number;
  /**
   * why the answer ended, where the provider says: the token limit cut it off (Anthropic `max_tokens`, Ollama
   * `length`), or the model declined (Anthropic `refusal`); unset: it ended by itself
   */
  stop?: 'max_tokens' | 'refusal';
}

/** A provider's raw chat call: one HTTP request, no retries, no cache (those wrap it). */
export interface ChatBackend {
  readonly provider: LlmProvider;
  readonly model: string;
  /** identifies the endpoint for shared limits, e.g. 'anthropic:https://api.anthropic.com' */
  readonly endpointKey: string;
  chat(request: ChatRequest): Promise<ChatAnswer>;
}
