import { createLocalEmbedder, usesLocalEmbedder } from './local-hash.js';
import { createOllamaEmbedder, type OllamaEmbedderOptions } from './ollama.js';
import type { Embedder } from './types.js';

export interface EmbedderSettings {
  /** CPE_OLLAMA_HOST (comma-separated there); empty = the local embedder */
  ollamaHosts: string[];
  /** Ollama model (default mxbai-embed-large); ignored by the local embedder, which is always local-hash-v2 */
  model?: string;
  dimensions?: number;
  batchSize?: number;
  maxBatchChars?: number;
  concurrency?: number;
  timeoutMs?: number;
  maxRetries?: number;
  /** worker threads of the local embedder (CPE_EMBED_THREADS); default one per core, 0 = main thread */
  localThreads?: number;
}

export const DEFAULT_OLLAMA_EMBED_MODEL = 'mxbai-embed-large';

/**
 * The configured embedder: Ollama when hosts are set, else the local deterministic one. A model whose output
 * size is unknown is asked once, so that collections can be set up with the right size.
 */
export async function createEmbedder(settings: EmbedderSettings, signal?: AbortSignal): Promise<Embedder> {
  if (usesLocalEmbedder(settings.ollamaHosts)) return createLocalEmbedder({ threads: settings.localThreads });
  const hosts = settings.ollamaHosts.map((h) => h.trim()).filter(Boolean);
  const options: OllamaEmbedderOptions = {
    hosts,
    // 'mxbai-embed-large:latest' is 'mxbai-embed-large' to Ollama: one name for the cache, stamps and search
    model: (settings.model ?? DEFAULT_OLLAMA_EMBED_MODEL).replace(/:latest$/, ''),
    dimensions: settings.dimensions,
    batchSize: settings.batchSize,
    maxBatchChars: settings.maxBatchChars,
    concurrency: settings.concurrency,
    timeoutMs: settings.timeoutMs,
    maxRetries: settings.maxRetries,
  };
  const embedder = createOllamaEmbedder(options);
  if (embedder.dimensions === 0) await embedder.probeDimensions(signal);
  return embedder;
}

/** CPE_OLLAMA_HOST may hold several hosts: 'gpu1:11434,gpu2:11434' (commas or whitespace). */
export function parseOllamaHosts(value: string | undefined): string[] {
  return (value ?? '')
    .split(/[\s,]+/)
    .map((h) => h.trim())
    .filter(Boolean);
}
