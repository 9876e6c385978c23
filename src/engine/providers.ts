import type { AppConfig, Secrets } from '../config/schema.js';
import type { SqlExecutor } from '../db/sql.js';
import { createLocalEmbedder, LOCAL_EMBEDDER_MODEL, usesLocalEmbedder } from '../embed/local-hash.js';
import type { Embedder } from '../embed/types.js';
import { chooseLlmProvider, chooseVisionProvider } from '../llm/provider-choice.js';
import type { LlmProvider } from '../llm/types.js';
import { maskUrl } from '../util/credentials.js';
import type { VectorIndex } from '../vectors/types.js';
import type { Providers } from './plugin.js';

// The client libraries (Anthropic SDK, Qdrant client, ...) are loaded on first use only: a command that needs
// none of them (status, steps, pipelines) starts without paying for their import. The import is made once: a
// dynamic import() of a loaded module still goes through the module loader (and its hooks) on every call.
const once = <T>(load: () => Promise<T>) => {
  let loaded: Promise<T> | undefined;
  return () => (loaded ??= load());
};
const loadEmbedderFactory = once(() => import('../embed/create-embedder.js'));
const loadVectorFactory = once(() => import('../vectors/create-vector-index.js'));
const loadLlmFactory = once(() => import('../llm/factory.js'));

/**
 * Providers from configuration, created on first use and shared by every step of the process. The profile
 * follows from configuration only: a URL set means the real server, none means the embedded part.
 */
export function createProviders(config: AppConfig, secrets: Secrets, db: SqlExecutor): Providers {
  const embedders = new Map<string, Promise<Embedder>>();
  let vectors: Promise<VectorIndex> | undefined;
  const llmSettings = () => ({
    anthropicApiKey: secrets.anthropicApiKey,
    anthropicBaseUrl: config.anthropicBaseUrl,
    ollamaHosts: config.ollamaHosts,
    defaultProvider: config.llmProvider as LlmProvider | undefined,
    timeoutMs: config.llmTimeoutSeconds === undefined ? undefined : config.llmTimeoutSeconds * 1000,
    db,
  });
  return {
    embedder(options = {}) {
      const model = options.model ?? config.embedModel;
      const key = model ?? '(default)';
      let embedder = embedders.get(key);
      if (!embedder) {
        // the local embedder (no Ollama host) is created at once, without a module to load: a step's setup can
        // start its threads before anything else yields to the event loop (see RunInfo.expectDocuments)
        embedder = usesLocalEmbedder(config.ollamaHosts)
          ? Promise.resolve(createLocalEmbedder({ threads: config.embedThreads }))
          : loadEmbedderFactory().then(({ createEmbedder }) =>
              createEmbedder({ ollamaHosts: config.ollamaHosts, model, localThreads: config.embedThreads }),
            );
        embedder.catch(() => embedders.delete(key));
        embedders.set(key, embedder);
      }
      return embedder;
    },
    vectors() {
      vectors ??= loadVectorFactory().then(({ createVectorIndex }) =>
        createVectorIndex({ qdrantUrl: config.qdrantUrl, qdrantApiKey: secrets.qdrantApiKey, db }),
      );
      return vectors;
    },
    async llm(options = {}) {
      const settings = llmSettings();
      // no provider: the answer without loading the client libraries
      const choice = chooseLlmProvider(settings, options.provider);
      if (!choice.provider) return { llm: undefined, reason: choice.reason };
      const { resolveLlm } = await loadLlmFactory();
      return resolveLlm(settings, options);
    },
    async vision(options = {}) {
      const settings = llmSettings();
      const choice = chooseVisionProvider(settings, options.provider);
      if (!choice.provider) return { vision: undefined, reason: choice.reason };
      const { resolveVision } = await loadLlmFactory();
      return resolveVision(settings, options);
    },
  };
}

/**
 * Which LLM and vision provider the LLM steps would use (anthropic, ollama or none): what decides whether a step
 * that ended skipped for want of one would run now. Not where they are: a checkpoint keyed by the profile's text
 * (describeProfile) was made stale by a proxy URL spelt another way (127.0.0.1 for localhost), and every document
 * ran its LLM steps, and all after them, again.
 */
export function providerKinds(config: AppConfig, secrets: Secrets): { llm: string; vision: string } {
  const ollama = config.ollamaHosts.length > 0;
  const anthropic = Boolean(secrets.anthropicApiKey);
  return {
    llm: anthropic
      ? config.llmProvider === 'ollama' && ollama
        ? 'ollama'
        : 'anthropic'
      : ollama
        ? 'ollama'
        : 'none',
    // as chooseVisionProvider picks: Ollama when configured, else Claude
    vision: ollama ? 'ollama' : anthropic ? 'anthropic' : 'none',
  };
}

/** Which parts are embedded and which are real servers: shown by `cpe status` and at the start of every run. */
export function describeProfile(
  config: AppConfig,
  secrets: Secrets,
  locations: { content: string; log: string },
) {
  const ollama = config.ollamaHosts.length
    ? `Ollama ${config.ollamaHosts.map(maskUrl).join(', ')}`
    : undefined;
  const llm = secrets.anthropicApiKey
    ? config.llmProvider === 'ollama' && ollama
      ? `${ollama} (Anthropic also configured)`
      : `Anthropic${config.anthropicBaseUrl ? ` via ${maskUrl(config.anthropicBaseUrl)}` : ''}`
    : (ollama ?? 'none: LLM steps end skipped');
  return {
    ki_content: locations.content,
    ki_dev: locations.log,
    vectors: config.qdrantUrl
      ? `Qdrant ${maskUrl(config.qdrantUrl)}`
      : 'embedded (vectors in ki_content, exact search)',
    embedder: ollama
      ? `${ollama}, model ${config.embedModel ?? 'mxbai-embed-large'}`
      : `embedded ${LOCAL_EMBEDDER_MODEL} (no server)`,
    llm,
    // as chooseVisionProvider picks: Ollama when configured, else Claude (it reads images too)
    vision: ollama
      ? `${ollama}`
      : secrets.anthropicApiKey
        ? `Anthropic${config.anthropicBaseUrl ? ` via ${maskUrl(config.anthropicBaseUrl)}` : ''}`
        : 'none: vision_analyze ends skipped',
  };
}
