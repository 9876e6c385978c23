import type { SqlExecutor } from '../db/sql.js';
import { AnthropicBackend, DEFAULT_ANTHROPIC_MODEL } from './anthropic.js';
import { LlmCache } from './cache.js';
import { type LimiterOptions, RateLimiter } from './limiter.js';
import { DEFAULT_OLLAMA_CHAT_MODEL, DEFAULT_OLLAMA_VISION_MODEL, OllamaChatBackend } from './ollama-chat.js';
import { chooseLlmProvider, chooseVisionProvider, type ProviderSettings } from './provider-choice.js';
import { StructuredLlmClient } from './structured.js';
import type { ChatBackend, LimitSettings, LlmProvider, LlmResolution, VisionResolution } from './types.js';
import { StructuredVisionClient } from './vision.js';

export interface LlmSettings extends ProviderSettings {
  /** another Messages API endpoint (a proxy, a test server) */
  anthropicBaseUrl?: string;
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

export { NO_LLM_REASON, NO_VISION_REASON } from './provider-choice.js';

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

/** The backend of a provider that chooseLlmProvider/chooseVisionProvider found usable. */
function backendFor(
  settings: LlmSettings,
  provider: LlmProvider,
  model: string | undefined,
  ollamaDefaultModel: string,
): ChatBackend {
  if (provider === 'anthropic') {
    return new AnthropicBackend({
      apiKey: settings.anthropicApiKey!,
      baseUrl: settings.anthropicBaseUrl,
      model: model ?? DEFAULT_ANTHROPIC_MODEL,
      timeoutMs: settings.timeoutMs,
    });
  }
  return new OllamaChatBackend({
    hosts: settings.ollamaHosts,
    model: model ?? ollamaDefaultModel,
    timeoutMs: settings.timeoutMs,
  });
}

/**
 * The LLM for a step: its config's provider and model, else the configured default. No provider configured
 * is not an error: the step ends `skipped` with the reason.
 */
export function resolveLlm(settings: LlmSettings, options: ResolveOptions = {}): LlmResolution {
  const choice = chooseLlmProvider(settings, options.provider);
  if (!choice.provider) return { llm: undefined, reason: choice.reason };
  return {
    llm: clientFor(settings, backendFor(settings, choice.provider, options.model, DEFAULT_OLLAMA_CHAT_MODEL)),
  };
}

/** The vision model: Ollama llama3.2-vision:11b by default; Claude when only Anthropic is configured or chosen. */
export function resolveVision(settings: LlmSettings, options: ResolveOptions = {}): VisionResolution {
  const choice = chooseVisionProvider(settings, options.provider);
  if (!choice.provider) return { vision: undefined, reason: choice.reason };
  const backend = backendFor(settings, choice.provider, options.model, DEFAULT_OLLAMA_VISION_MODEL);
  return { vision: new StructuredVisionClient(clientFor(settings, backend)) };
}

/** Forgets shared limiters (tests that change limits between cases). */
export function resetLlmRegistry(): void {
  limiters.clear();
  clients = new WeakMap();
}
