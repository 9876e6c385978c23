import { EMBED_THREAD_NICE } from '../embed/thread-nice.js';

/**
 * Every configuration key cpe knows, with its environment variable and default. Precedence:
 * command-line flags > environment (CPE_*) > config file (cpe.config.json or --config) > defaults.
 * Secrets (ANTHROPIC_API_KEY, QDRANT_API_KEY) come only from the environment and are never printed.
 */
export interface AppConfig {
  /** folder of the SQLite files, the archive and caches (embedded default) */
  dataDir: string;
  /** ki_content on MariaDB/MySQL; unset = SQLite */
  dbUrl?: string;
  /** ki_dev on MariaDB/MySQL; unset = same server as dbUrl (database ki_dev), or SQLite */
  logDbUrl?: string;
  /** folders with custom step plugins */
  plugins: string[];
  /** default source folder for run/scan/watch */
  source?: string;
  /** default pipeline name (else the is_default one) */
  pipeline?: string;
  /** documents processed at once */
  concurrency: number;
  /** content-addressed archive of original bytes (default <dataDir>/archive) */
  archiveDir?: string;
  /** Ollama hosts (embeddings, chat, vision); unset = local embedder, no Ollama LLM */
  ollamaHosts: string[];
  /** Qdrant URL; unset = vectors in SQL (embedded index) */
  qdrantUrl?: string;
  /** embedding model; default mxbai-embed-large with Ollama, local-hash-v2 without */
  embedModel?: string;
  /** worker threads of the local embedder; default one per core, 0 = on the main thread */
  embedThreads?: number;
  /**
   * nice value the process's other threads (V8's compiler and collector, libuv's pool, cpe's checkpoint thread)
   * get when a run starts, and keep, so that the thread running it keeps its core; 0 = leave them (Linux only)
   */
  helperThreadNice: number;
  /** default LLM provider for LLM steps: anthropic | ollama (default: whichever is configured) */
  llmProvider?: 'anthropic' | 'ollama';
  /** base URL of the Anthropic API (for proxies and tests) */
  anthropicBaseUrl?: string;
  /** how long one LLM or vision request may wait for its answer (default 120 s Anthropic, 300 s Ollama) */
  llmTimeoutSeconds?: number;
  /** queue lease length; a worker heartbeats at a third of it */
  leaseSeconds: number;
  /** attempts per queue item before it is dead */
  maxAttempts: number;
  /** upper bound of a file's size */
  maxFileMb: number;
  /** first delay before a retryable step failure is retried (doubles per attempt, capped at 30 s) */
  retryBaseMs: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

export interface Secrets {
  anthropicApiKey?: string;
  qdrantApiKey?: string;
}

/** key -> environment variable */
export const envNames: Record<keyof AppConfig, string> = {
  dataDir: 'CPE_DATA_DIR',
  dbUrl: 'CPE_DB_URL',
  logDbUrl: 'CPE_LOG_DB_URL',
  plugins: 'CPE_PLUGIN_DIRS',
  source: 'CPE_SOURCE',
  pipeline: 'CPE_PIPELINE',
  concurrency: 'CPE_CONCURRENCY',
  archiveDir: 'CPE_ARCHIVE_DIR',
  ollamaHosts: 'CPE_OLLAMA_HOST',
  qdrantUrl: 'CPE_QDRANT_URL',
  embedModel: 'CPE_EMBED_MODEL',
  embedThreads: 'CPE_EMBED_THREADS',
  helperThreadNice: 'CPE_HELPER_THREAD_NICE',
  llmProvider: 'CPE_LLM_PROVIDER',
  anthropicBaseUrl: 'CPE_ANTHROPIC_BASE_URL',
  llmTimeoutSeconds: 'CPE_LLM_TIMEOUT_SECONDS',
  leaseSeconds: 'CPE_LEASE_SECONDS',
  maxAttempts: 'CPE_MAX_ATTEMPTS',
  maxFileMb: 'CPE_MAX_FILE_MB',
  retryBaseMs: 'CPE_RETRY_BASE_MS',
  logLevel: 'CPE_LOG_LEVEL',
};

/** What applies when an optional setting is not set, as `cpe config` says it. */
export const whenUnset: Partial<Record<keyof AppConfig, string>> = {
  dbUrl: 'SQLite files in dataDir',
  logDbUrl: 'the server of dbUrl (database ki_dev), else SQLite',
  source: 'no folder: `cpe run` and `cpe scan` need --source',
  pipeline: 'the default pipeline (is_default = 1)',
  archiveDir: 'dataDir/archive',
  qdrantUrl: 'vectors in ki_content (the embedded index)',
  embedModel: 'local-hash-v2 (with Ollama: mxbai-embed-large)',
  embedThreads: 'one per core',
  llmProvider: 'anthropic when ANTHROPIC_API_KEY is set, else ollama when CPE_OLLAMA_HOST is, else none',
  anthropicBaseUrl: "Anthropic's API",
  llmTimeoutSeconds: '120 s with Anthropic, 300 s with Ollama',
};

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    dataDir: { type: 'string', minLength: 1 },
    dbUrl: { type: 'string', pattern: '^(mysql|mariadb)://' },
    logDbUrl: { type: 'string', pattern: '^(mysql|mariadb)://' },
    plugins: { type: 'array', items: { type: 'string', minLength: 1 } },
    source: { type: 'string', minLength: 1 },
    pipeline: { type: 'string', minLength: 1 },
    concurrency: { type: 'integer', minimum: 1, maximum: 64 },
    archiveDir: { type: 'string', minLength: 1 },
    ollamaHosts: { type: 'array', items: { type: 'string', pattern: '^https?://' } },
    qdrantUrl: { type: 'string', pattern: '^https?://' },
    embedModel: { type: 'string', minLength: 1 },
    embedThreads: { type: 'integer', minimum: 0, maximum: 256 },
    helperThreadNice: { type: 'integer', minimum: 0, maximum: 19 },
    llmProvider: { enum: ['anthropic', 'ollama'] },
    anthropicBaseUrl: { type: 'string', pattern: '^https?://' },
    llmTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 86400 },
    leaseSeconds: { type: 'integer', minimum: 5, maximum: 86400 },
    maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
    maxFileMb: { type: 'number', exclusiveMinimum: 0 },
    retryBaseMs: { type: 'integer', minimum: 0, maximum: 600000 },
    logLevel: { enum: ['debug', 'info', 'warn', 'error'] },
  },
} as const;

export const defaultConfig = (cwd: string): AppConfig => ({
  dataDir: `${cwd}/.cpe`,
  plugins: [],
  // 4: the embedding workers and this thread both have work while documents wait on each other (measured in bench/)
  concurrency: 4,
  ollamaHosts: [],
  // the embedding threads' value: on two cores an ingestion pass of the shared corpus ~3% faster, of 1,000 small
  // documents ~4% (bench/ingest.ts, docs/benchmarks.md)
  helperThreadNice: EMBED_THREAD_NICE,
  leaseSeconds: 60,
  maxAttempts: 3,
  maxFileMb: 200,
  retryBaseMs: 1000,
  logLevel: 'info',
});
