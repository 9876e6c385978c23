import { readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, ErrorCodes } from '../errors.js';
import { builtinStepsDir } from '../paths.js';
import { configSchemaProblem } from './config-validator.js';
import type { StepPlugin } from './plugin.js';

export interface RegisteredPlugin {
  plugin: StepPlugin;
  /** 'builtin' or the custom module's file */
  source: 'builtin' | string;
  file: string;
}

export interface PluginRegistry {
  get(type: string): RegisteredPlugin | undefined;
  all(): RegisteredPlugin[];
  /** modules that broke the contract or clashed; each message names the file */
  problems: string[];
}

const TYPE_NAME = /^[a-z][a-z0-9_]{0,99}$/;
const MODULE_FILE = /^(?!.*\.d\.ts$)(?!.*\.test\.)[^.].*\.(ts|mts|js|mjs)$/;

let tsxRegistered = false;
async function ensureTypeScriptLoader(file: string): Promise<void> {
  if (tsxRegistered || !/\.m?ts$/.test(file) || process.execArgv.some((a) => a.includes('tsx'))) return;
  const { register } = await import('tsx/esm/api');
  register();
  // a .ts file in a folder without `"type": "module"` is loaded as CommonJS: that loader needs tsx too
  const { register: registerCommonJs } = await import('tsx/cjs/api');
  registerCommonJs();
  tsxRegistered = true;
}

/** Checks a module's default export against the contract; returns what is wrong (empty = fine). */
export function checkContract(candidate: unknown): string[] {
  if (candidate === null || typeof candidate !== 'object') return ['has no default export object'];
  const p = candidate as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof p.type !== 'string' || !TYPE_NAME.test(p.type))
    problems.push('type must be a snake_case string');
  if (typeof p.description !== 'string' || p.description.trim() === '')
    problems.push('description must be a non-empty string');
  if (p.scope !== 'document' && p.scope !== 'run') problems.push("scope must be 'document' or 'run'");
  if (typeof p.run !== 'function') problems.push('run must be a function');
  if (p.setup !== undefined && typeof p.setup !== 'function') problems.push('setup must be a function');
  if (p.teardown !== undefined && typeof p.teardown !== 'function')
    problems.push('teardown must be a function');
  if (p.configSchema === null || typeof p.configSchema !== 'object' || Array.isArray(p.configSchema))
    problems.push('configSchema must be a JSON Schema object');
  for (const key of ['reads', 'writes'] as const) {
    const kinds = p[key];
    if (kinds === undefined) continue;
    if (!Array.isArray(kinds) || !kinds.every((k) => typeof k === 'string' && k.trim() !== ''))
      problems.push(`${key} must be an array of names of kinds of data, e.g. ['chunks']`);
  }
  return problems;
}

function listModules(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => MODULE_FILE.test(f))
    .sort()
    .map((f) => path.join(dir, f))
    .filter((f) => statSync(f).isFile());
}

async function loadModule(file: string): Promise<{ plugin?: StepPlugin; problems: string[] }> {
  try {
    await ensureTypeScriptLoader(file);
    const mod = await import(pathToFileURL(file).href);
    // a module compiled to CommonJS (a .ts file in a folder that is not "type": "module") comes back as
    // { default: module.exports }, its own default export one level down
    const inner = mod.default as { default?: unknown; type?: unknown } | undefined;
    const exported =
      inner && typeof inner === 'object' && 'default' in inner && !('type' in inner) ? inner.default : inner;
    const problems = checkContract(exported);
    return problems.length ? { problems } : { plugin: exported as StepPlugin, problems };
  } catch (error) {
    return { problems: [`cannot be loaded: ${(error as Error).message.split('\n')[0]}`] };
  }
}

/**
 * Loads the built-in steps (steps/, basename = type) and the custom plugins of the given folders.
 * A custom type may not replace a built-in, and two custom modules may not share a type.
 */
export async function loadPluginRegistry(pluginDirs: readonly string[] = []): Promise<PluginRegistry> {
  const byType = new Map<string, RegisteredPlugin>();
  const problems: string[] = [];

  for (const file of listModules(builtinStepsDir)) {
    const { plugin, problems: wrong } = await loadModule(file);
    const expected = path.basename(file).replace(/\.(ts|mts|js|mjs)$/, '');
    if (!plugin) {
      problems.push(`step plugin ${file}: ${wrong.join('; ')}`);
    } else if (plugin.type !== expected) {
      problems.push(
        `step plugin ${file}: type '${plugin.type}' must equal the file's basename '${expected}'`,
      );
    } else {
      byType.set(plugin.type, { plugin, source: 'builtin', file });
    }
  }

  // a folder named twice (relative and absolute, with a trailing slash) is read once, not a clash with itself
  const seenDirs = new Set<string>();
  for (const dir of pluginDirs) {
    let real: string;
    try {
      real = realpathSync(dir);
    } catch {
      real = path.resolve(dir); // missing: reported below when it is read
    }
    if (seenDirs.has(real)) continue;
    seenDirs.add(real);
    let files: string[];
    try {
      files = listModules(dir);
    } catch (error) {
      problems.push(
        `plugin folder ${dir}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
      continue;
    }
    for (const file of files) {
      const { plugin, problems: wrong } = await loadModule(file);
      if (!plugin) {
        problems.push(`step plugin ${file}: ${wrong.join('; ')}`);
        continue;
      }
      const existing = byType.get(plugin.type);
      if (existing) {
        problems.push(
          existing.source === 'builtin'
            ? `step plugin ${file}: type '${plugin.type}' is a built-in step type; a custom plugin may not replace it (choose another type name)`
            : `step plugin ${file}: type '${plugin.type}' is already defined by ${existing.file}`,
        );
        continue;
      }
      byType.set(plugin.type, { plugin, source: file, file });
    }
  }

  return {
    get: (type) => byType.get(type),
    all: () => [...byType.values()].sort((a, b) => a.plugin.type.localeCompare(b.plugin.type)),
    problems,
  };
}

/**
 * Every plugin whose config schema is not valid JSON Schema or does not compile, one message each naming its
 * file: what `cpe steps` reports (loading the plugins does not compile their schemas, see config-validator.ts).
 */
export function schemaProblems(registry: PluginRegistry): string[] {
  return registry.all().flatMap((r) => {
    const problem = configSchemaProblem(r.plugin.configSchema);
    return problem ? [`step plugin ${r.file}: ${problem}`] : [];
  });
}

/** Throws when any plugin module is broken: a broken plugin folder is a configuration error. */
export function assertRegistryHealthy(registry: PluginRegistry): void {
  if (registry.problems.length > 0) {
    throw new ConfigError(
      ErrorCodes.PLUGIN_INVALID,
      `invalid step plugins:\n  ${registry.problems.join('\n  ')}`,
      {
        details: { problems: registry.problems },
      },
    );
  }
}
