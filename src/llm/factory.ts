import type { SqlExecutor } from '../db/sql.js';
import { ConfigError, ErrorCodes } from '../errors.js';
import { AnthropicBackend, DEFAULT_ANTHROPIC_MODEL } from './anthropic.js';
import { LlmCache } from './cache.js';
import { type LimiterOptions, RateLimiter } from './limiter.js';
import { DEFAULT_OLLAMA_CHAT_MODEL, DEFAULT_OLLAMA_VISION_MODEL, OllamaChatBackend } from './ollama-chat.js';
import { StructuredLlmClient } from './structured.js';
import type { ChatBackend, LimitSettings, LlmProvider, LlmResolution, VisionResolution } from './types.js';
import { StructuredVisionClient } from './vision.js';

export interface LlmSettings {
  /** ANTHROPIC_API_KEY; never logged */
  anthropicApiKey?: string;
  /** another Messages API endpoint (a proxy, a test server) */
  anthropicBaseUrl?: string;
  /** CPE_OLLAMA_HOST, comma-separated hosts split into a list */
  ollamaHosts: string[];
  /** provider of steps that do not name one; default: anthropic when a key is set, else ollama when a host is */
  defaultProvider?: LlmProvider;
  /** ki_content: the response cache lives there (llm_cache) */
  db: SqlExecutor;
  /** default limits per endpoint (steps can only tighten them) */
  limits?: Partial<LimitSettings>;
  /** per request (default: 120 s Anthropic, 300 s Ollama) */
  timeoutMs?: number;
  /** backoff tuning (tests use small delays) */
  limiter?: Pick<LimiterOptions, 'baseDelayMs' | 'maxDelayMs' | 'onRetry'>;
}

export interface ResolveOptions {
  provider?: string;
  model?: string;
}

export const NO_LLM_REASON = 'no LLM configured: set ANTHROPIC_API_KEY or CPE_OLLAMA_HOST';
export const NO_VISION_REASON = 'no vision model configured: set CPE_OLLAMA_HOST (or ANTHROPIC_API_KEY)';

// One limiter per endpoint for the whole process: the limits belong to an account or a server, not to a step.
const limiters = new Map<string, RateLimiter>();
// One client per (database, endpoint, model), so identical calls in flight are shared across steps.
let clients = new WeakMap<SqlExecutor, Map<string, StructuredLlmClient>>();

function limiterFor(endpointKey: string, settings: LlmSettings): RateLimiter {
  let limiter = limiters.get(endpointKey);
  if (!limiter) {
    limiter = new RateLimiter(settings.limits ?? {}, settings.limiter ?? {});
    limiters.set(endpointKey, limiter);
  }
  return limiter;
}

function clientFor(settings: LlmSettings, backend: ChatBackend): StructuredLlmClient {
  let perDb = clients.get(settings.db);
  if (!perDb) {
    perDb = new Map();
    clients.set(settings.db, perDb);
  }
  const key = `${backend.endpointKey}|${backend.model}`;
  let client = perDb.get(key);
  if (!client) {
    client = new StructuredLlmClient(
      backend,
      limiterFor(backend.endpointKey, settings),
      new LlmCache(settings.db),
    );
    perDb.set(key, client);
  }
  return client;
}

function checkProvider(provider: string): LlmProvider {
  if (provider !== 'anthropic' && provider !== 'ollama') {
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `unknown LLM provider '${provider}' (known: anthropic, ollama)`,
    );
  }
  return provider;
}

type BackendChoice = { backend: ChatBackend; reason?: undefined } | { backend: undefined; reason: string };

function backendFor(
  settings: LlmSettings,
  provider: LlmProvider,
  model: string | undefined,
  ollamaDefaultModel: string,
): BackendChoice {
  if (provider === 'anthropic') {
    if (!settings.anthropicApiKey)
      return { backend: undefined, reason: 'provider anthropic chosen but ANTHROPIC_API_KEY is not set' };
    return {
      backend: new AnthropicBackend({
        apiKey: settings.anthropicApiKey,
        baseUrl: settings.anthropicBaseUrl,
        model: model ?? DEFAULT_ANTHROPIC_MODEL,
        timeoutMs: settings.timeoutMs,
      }),
    };
  }
  if (settings.ollamaHosts.length === 0)
    return { backend: undefined, reason: 'provider ollama chosen but CPE_OLLAMA_HOST is not set' };
  return {
    backend: new OllamaChatBackend({
      hosts: settings.ollamaHosts,
      model: model ?? ollamaDefaultModel,
      timeoutMs: settings.timeoutMs,
    }),
  };
}

/**
 * The LLM for a step: its config's provider and model, else the configured default. No provider configured
 * is not an error: the step ends `skipped` with the reason.
 */
export function resolveLlm(settings: LlmSettings, options: ResolveOptions = {}): LlmResolution {
  const provider = options.provider
    ? checkProvider(options.provider)
    : (settings.defaultProvider ??
      (settings.anthropicApiKey ? 'anthropic' : settings.ollamaHosts.length > 0 ? 'ollama' : undefined));
  if (!provider) return { llm: undefined, reason: NO_LLM_REASON };
  const choice = backendFor(settings, provider, options.model, DEFAULT_OLLAMA_CHAT_MODEL);
  if (!choice.backend) return { llm: undefined, reason: choice.reason };
  return { llm: clientFor(settings, choice.backend) };
}

/** The vision model: Ollama llama3.2-vision:11b by default; Claude when only Anthropic is configured or chosen. */
export function resolveVision(settings: LlmSettings, options: ResolveOptions = {}): VisionResolution {
  const provider = options.provider
    ? checkProvider(options.provider)
    : settings.ollamaHosts.length > 0
      ? 'ollama'
      : settings.anthropicApiKey
        ? 'anthropic'
        : undefined;
  if (!provider) return { vision: undefined, reason: NO_VISION_REASON };
  const choice = backendFor(settings, provider, options.model, DEFAULT_OLLAMA_VISION_MODEL);
  if (!choice.backend) return { vision: undefined, reason: choice.reason };
  return { vision: new StructuredVisionClient(clientFor(settings, choice.backend)) };
}

/** Forgets shared limiters (tests that change limits between cases). */
export function resetLlmRegistry(): void {
  limiters.clear();
  clients = new WeakMap();
}
