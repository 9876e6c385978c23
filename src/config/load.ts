import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LOCAL_EMBEDDER_MODEL } from '../embed/local-hash.js';
import { ConfigError, ErrorCodes } from '../errors.js';
import { maskUrl, registerSecrets, urlSecrets } from '../util/credentials.js';
import { schemaValidator } from '../util/schema-validators.js';
import { findJsonSyntaxError } from './json-syntax-error.js';
import { type AppConfig, configSchema, defaultConfig, envNames, type Secrets } from './schema.js';

export interface LoadedConfig {
  config: AppConfig;
  secrets: Secrets;
  /** where each key's value came from: flag, env, file or default */
  sources: Partial<Record<keyof AppConfig, 'flag' | 'env' | 'file' | 'default'>>;
  configFile?: string;
}

const numberKeys = new Set<keyof AppConfig>([
  'concurrency',
  'embedThreads',
  'helperThreadNice',
  'leaseSeconds',
  'llmTimeoutSeconds',
  'maxAttempts',
  'maxFileMb',
  'retryBaseMs',
]);
const pathKeys = new Set<keyof AppConfig>(['dataDir', 'source', 'archiveDir']);
/** The settings that are URLs, each checked by parsing it (a list: each of its entries). */
const urlKeys: ReadonlyArray<keyof AppConfig> = [
  'dbUrl',
  'logDbUrl',
  'qdrantUrl',
  'anthropicBaseUrl',
  'ollamaHosts',
];

function fromEnv(key: keyof AppConfig, raw: string): unknown {
  if (key === 'plugins') return raw.split(path.delimiter).filter(Boolean);
  if (key === 'ollamaHosts')
    return raw
      .split(/[,\s]+/)
      .filter(Boolean)
      .map(withScheme);
  // decimal only: Number() also reads '0x10', '1e1', '0b11' and '' (0); anything else stays text, which the schema
  // refuses naming the variable
  if (numberKeys.has(key)) return DECIMAL.test(raw) ? Number(raw) : raw;
  return raw;
}

/** A number as people write one in a setting: digits, optionally signed, optionally with a decimal fraction. */
const DECIMAL = /^\s*[+-]?\d+(\.\d+)?\s*$/;

function hasDecodableUserInfo(url: URL): boolean {
  try {
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    return true;
  } catch {
    return false;
  }
}

/** CPE_OLLAMA_HOST may be given as host:port, as Ollama's own OLLAMA_HOST is. */
const withScheme = (host: string) => (/^https?:\/\//.test(host) ? host : `http://${host}`);

/**
 * Builds the effective configuration. `flags` are command-line values (undefined = not given).
 * Every problem is reported at once, each naming its key and where it came from.
 */
export function loadConfig(
  options: { flags?: Partial<AppConfig>; configPath?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): LoadedConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const sources: LoadedConfig['sources'] = {};
  const merged: Record<string, unknown> = { ...defaultConfig(cwd) };
  for (const key of Object.keys(merged)) sources[key as keyof AppConfig] = 'default';

  const explicit = options.configPath ?? env.CPE_CONFIG;
  const configFile = explicit ? path.resolve(cwd, explicit) : path.join(cwd, 'cpe.config.json');
  let fileValues: Record<string, unknown> = {};
  if (existsSync(configFile)) {
    // a byte order mark (Windows editors write one) is not JSON: left out
    const text = readFileSync(configFile, 'utf8').replace(/^\uFEFF/, '');
    try {
      fileValues = JSON.parse(text);
    } catch {
      // not JSON.parse's message: it quotes a snippet of the file, which may be part of a secret pasted into it
      const found = findJsonSyntaxError(text);
      throw new ConfigError(
        ErrorCodes.CONFIG_INVALID,
        found
          ? `${configFile}: not valid JSON at line ${found.line}, column ${found.column} (${found.reason})`
          : `${configFile}: not valid JSON`,
      );
    }
    if (fileValues === null || typeof fileValues !== 'object' || Array.isArray(fileValues)) {
      throw new ConfigError(ErrorCodes.CONFIG_INVALID, `${configFile}: must hold a JSON object`);
    }
  } else if (explicit) {
    throw new ConfigError(ErrorCodes.CONFIG_INVALID, `config file ${configFile} does not exist`);
  }

  const problems: string[] = [];
  for (const [key, value] of Object.entries(fileValues)) {
    if (!(key in envNames)) {
      const hint = /key|secret|password|token/i.test(key) ? ' (secrets come only from the environment)' : '';
      problems.push(`${configFile}: unknown key "${key}"${hint}`);
      continue;
    }
    // an empty path stays empty, for the schema to refuse (resolved, it was the folder itself)
    merged[key] =
      pathKeys.has(key as keyof AppConfig) && typeof value === 'string' && value !== ''
        ? path.resolve(path.dirname(configFile), value)
        : value;
    if (key === 'plugins' && Array.isArray(value)) {
      merged[key] = value.map((p) => (typeof p === 'string' ? path.resolve(path.dirname(configFile), p) : p));
    }
    if (key === 'ollamaHosts' && typeof value === 'string') merged[key] = fromEnv('ollamaHosts', value);
    sources[key as keyof AppConfig] = 'file';
  }
  for (const [key, name] of Object.entries(envNames) as Array<[keyof AppConfig, string]>) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    merged[key] = fromEnv(key, raw);
    if (pathKeys.has(key)) merged[key] = path.resolve(cwd, merged[key] as string);
    sources[key] = 'env';
  }
  for (const [key, value] of Object.entries(options.flags ?? {})) {
    if (value === undefined) continue;
    // a path that is not text (a caller of the API passing a number) is left to the schema check, which names it
    merged[key] =
      pathKeys.has(key as keyof AppConfig) && typeof value === 'string' && value !== ''
        ? path.resolve(cwd, value)
        : value;
    sources[key as keyof AppConfig] = 'flag';
  }

  const whereFrom = (key: string) => {
    const origin = sources[key as keyof AppConfig];
    return origin === 'env'
      ? `environment ${envNames[key as keyof AppConfig]}`
      : origin === 'file'
        ? configFile
        : (origin ?? 'config');
  };
  // the schema's validator (no meta-schema check on every start: a test checks the schema in ajv's strict mode)
  const validateConfig = schemaValidator('config', configSchema);
  const refused = new Set<string>();
  if (!validateConfig(merged)) {
    for (const error of validateConfig.errors ?? []) {
      const key =
        error.instancePath.split('/')[1] ??
        (error.params as { additionalProperty?: string }).additionalProperty ??
        '';
      refused.add(error.instancePath);
      problems.push(
        `${whereFrom(key)}: ${key}${error.instancePath
          .split('/')
          .slice(2)
          .map((p) => `[${p}]`)
          .join('')} ${error.message}${
          error.keyword === 'enum'
            ? ` (${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')})`
            : ''
        }`,
      );
    }
  }
  // the schema checks only the scheme: a URL that does not parse (a port out of range, a space in the host, no host)
  // failed every document later with a bare "Invalid URL". Not quoted: one that does not parse may hold a password
  // no masking can find (a space in it)
  for (const key of urlKeys) {
    if (refused.has(`/${key}`)) continue;
    const value = merged[key];
    const urls = Array.isArray(value) ? value : [value];
    urls.forEach((url, index) => {
      if (typeof url !== 'string' || refused.has(`/${key}/${index}`)) return;
      const name = Array.isArray(value) ? `${key}[${index}]` : key;
      if (URL.canParse(url)) {
        // a `%` not followed by two hex digits parses, but cannot be decoded into the user or password to send
        if (!hasDecodableUserInfo(new URL(url)))
          problems.push(
            `${whereFrom(key)}: ${name} has a malformed percent-escape in its user or password (a % in them is written %25)`,
          );
        return;
      }
      const hint = url.includes('@')
        ? ' (an @, /, ? or # in its user or password must be percent-encoded)'
        : '';
      problems.push(`${whereFrom(key)}: ${name} is not a valid URL${hint}`);
    });
  }
  // without an Ollama host every embedding is local-hash-v2's: another model named would be dropped silently
  const embedModel = merged.embedModel;
  const hosts = merged.ollamaHosts;
  if (
    typeof embedModel === 'string' &&
    embedModel !== LOCAL_EMBEDDER_MODEL &&
    !refused.has('/embedModel') &&
    Array.isArray(hosts) &&
    hosts.length === 0
  )
    problems.push(
      `${whereFrom('embedModel')}: embedModel '${embedModel}' is an Ollama model, and no Ollama host is set (CPE_OLLAMA_HOST): without one cpe embeds with ${LOCAL_EMBEDDER_MODEL}; set the host, or leave embedModel unset`,
    );
  if (problems.length > 0) {
    throw new ConfigError(ErrorCodes.CONFIG_INVALID, `invalid configuration:\n  ${problems.join('\n  ')}`, {
      details: { problems },
    });
  }
  // trimmed: a key from a mounted secret file ends in a newline, which fetch trims from the header it sends; the
  // key as sent is the one a server's error may quote back, so it is the one to use and to mask
  const secrets = {
    anthropicApiKey: env.ANTHROPIC_API_KEY?.trim() || undefined,
    qdrantApiKey: env.QDRANT_API_KEY?.trim() || undefined,
  };
  // masked wherever they would be shown or stored (an error that quotes an echoed header), the credentials in the
  // configured URLs too (a proxy that echoes the Basic authorization they are sent as)
  const config = merged as unknown as AppConfig;
  const urls = [
    config.dbUrl,
    config.logDbUrl,
    config.qdrantUrl,
    config.anthropicBaseUrl,
    ...(config.ollamaHosts ?? []),
  ];
  registerSecrets([secrets.anthropicApiKey, secrets.qdrantApiKey, ...urls.flatMap((url) => urlSecrets(url))]);
  return {
    config,
    secrets,
    sources,
    configFile: existsSync(configFile) ? configFile : undefined,
  };
}

/** The effective configuration for display: URLs' passwords masked, secrets shown only as set/unset. */
export function describeConfig(loaded: LoadedConfig): Record<string, unknown> {
  const mask = (url: unknown) => (typeof url === 'string' ? maskUrl(url) : url);
  return {
    ...loaded.config,
    dbUrl: mask(loaded.config.dbUrl),
    logDbUrl: mask(loaded.config.logDbUrl),
    qdrantUrl: mask(loaded.config.qdrantUrl),
    anthropicBaseUrl: mask(loaded.config.anthropicBaseUrl),
    ollamaHosts: loaded.config.ollamaHosts.map(mask),
    ANTHROPIC_API_KEY: loaded.secrets.anthropicApiKey ? '(set)' : '(unset)',
    QDRANT_API_KEY: loaded.secrets.qdrantApiKey ? '(set)' : '(unset)',
  };
}
