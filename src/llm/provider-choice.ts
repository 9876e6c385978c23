import { ConfigError, ErrorCodes } from '../errors.js';
import type { LlmProvider } from './types.js';

/**
 * Which LLM provider a step gets, decided from configuration alone. This module loads no client library: a
 * run without an LLM (the embedded default) learns that its LLM steps end skipped without importing the
 * Anthropic SDK and the Ollama client (about 170 ms of module loading on the first document otherwise).
 */

export const NO_LLM_REASON = 'no LLM configured: set ANTHROPIC_API_KEY or CPE_OLLAMA_HOST';
export const NO_VISION_REASON = 'no vision model configured: set CPE_OLLAMA_HOST (or ANTHROPIC_API_KEY)';

export interface ProviderSettings {
  /** ANTHROPIC_API_KEY; never logged */
  anthropicApiKey?: string;
  /** CPE_OLLAMA_HOST, comma-separated hosts split into a list */
  ollamaHosts: string[];
  /** provider of steps that do not name one; default: anthropic when a key is set, else ollama when a host is */
  defaultProvider?: LlmProvider;
}

export type ProviderChoice =
  | { provider: LlmProvider; reason?: undefined }
  | { provider: undefined; reason: string };

function checkProvider(provider: string): LlmProvider {
  if (provider !== 'anthropic' && provider !== 'ollama') {
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `unknown LLM provider '${provider}' (known: anthropic, ollama)`,
    );
  }
  return provider;
}

/** A provider chosen by name or default can still lack what it needs (its key, its host). */
function usable(settings: ProviderSettings, provider: LlmProvider): ProviderChoice {
  if (provider === 'anthropic' && !settings.anthropicApiKey)
    return { provider: undefined, reason: 'provider anthropic chosen but ANTHROPIC_API_KEY is not set' };
  if (provider === 'ollama' && settings.ollamaHosts.length === 0)
    return { provider: undefined, reason: 'provider ollama chosen but CPE_OLLAMA_HOST is not set' };
  return { provider };
}

/** The text LLM: the step's provider, else the configured default, else Anthropic when a key is set, else Ollama. */
export function chooseLlmProvider(settings: ProviderSettings, requested?: string): ProviderChoice {
  const provider = requested
    ? checkProvider(requested)
    : (settings.defaultProvider ??
      (settings.anthropicApiKey ? 'anthropic' : settings.ollamaHosts.length > 0 ? 'ollama' : undefined));
  return provider ? usable(settings, provider) : { provider: undefined, reason: NO_LLM_REASON };
}

/** The vision model: the step's provider, else Ollama when a host is set, else Anthropic when a key is. */
export function chooseVisionProvider(settings: ProviderSettings, requested?: string): ProviderChoice {
  const provider = requested
    ? checkProvider(requested)
    : settings.ollamaHosts.length > 0
      ? 'ollama'
      : settings.anthropicApiKey
        ? 'anthropic'
        : undefined;
  return provider ? usable(settings, provider) : { provider: undefined, reason: NO_VISION_REASON };
}
