import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, CpeError, ErrorCodes, messageOf } from '../errors.js';
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

/**
 * The plugin modules of a folder, sorted. An entry that cannot be read (a link to a file that is gone) is a problem
 * of that file: the folder's other plugins still load.
 */
function listModules(dir: string): { files: string[]; problems: string[] } {
  const files: string[] = [];
  const problems: string[] = [];
  for (const name of readdirSync(dir)
    .filter((f) => MODULE_FILE.test(f))
    .sort()) {
    const file = path.join(dir, name);
    try {
      if (statSync(file).isFile()) files.push(file);
    } catch (error) {
      problems.push(`step plugin ${file}: ${unreadableEntry(file, error)}`);
    }
  }
  return { files, problems };
}

function unreadableEntry(file: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  try {
    if (code === 'ENOENT' && lstatSync(file).isSymbolicLink())
      return `is a link to ${readlinkSync(file)}, which does not exist`;
  } catch {
    // gone meanwhile: the plain reason below
  }
  return `cannot be read (${code ?? messageOf(error)})`;
}

/**
 * What a loader's message says is wrong. esbuild (a .ts plugin) heads its message "Transform failed with 1 error:"
 * and puts the position and the reason on the next line: heading lines (ending with ':') are kept together with the
 * first line that says something, the rest (more errors, a code frame) is left out.
 */
export function loadFailure(error: unknown): string {
  const lines = messageOf(error)
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const said = lines.findIndex((line) => !line.endsWith(':'));
  return lines.slice(0, said === -1 ? lines.length : said + 1).join(' ');
}

/**
 * Where in the plugin's own file its loading failed, as ` (at syn.mjs:4)`, when the message does not say: Node
 * names the line of an error thrown by the module's top-level code only in the stack, and that of a syntax error
 * of a JavaScript module nowhere but on the terminal, so the file is checked again (`node --check`, only after it
 * failed) to learn it. A .ts plugin's loader (esbuild) puts the position in its message.
 */
function locationInFile(error: unknown, file: string): string {
  const base = path.basename(file);
  const message = messageOf(error);
  if (message.includes(`${base}:`)) return '';
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const at = new RegExp(`(?:${escaped(pathToFileURL(file).href)}|${escaped(file)}):(\\d+)(?::(\\d+))?`);
  let found = at.exec(stack);
  if (!found && error instanceof SyntaxError && !/\.[cm]?tsx?$/.test(file)) {
    const check = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10_000 });
    found = at.exec(check.stderr ?? '');
  }
  return found ? ` (at ${base}:${found[1]}${found[2] ? `:${found[2]}` : ''})` : '';
}

async function loadModule(file: string): Promise<{ plugin?: StepPlugin; problems: string[] }> {
  try {
    await ensureTypeScriptLoader(file);
    const mod = await watchPluginCall(
      import(pathToFileURL(file).href),
      `step plugin ${file} (loading its module)`,
      () =>
        new Error(
          'its module never finished loading: its top-level code awaits a promise that nothing left in the process can settle',
        ),
    );
    // a module compiled to CommonJS (a .ts file in a folder that is not "type": "module") comes back as
    // { default: module.exports }, its own default export one level down
    const inner = mod.default as { default?: unknown; type?: unknown } | undefined;
    const exported =
      inner && typeof inner === 'object' && 'default' in inner && !('type' in inner) ? inner.default : inner;
    const problems = checkContract(exported);
    return problems.length ? { problems } : { plugin: exported as StepPlugin, problems };
  } catch (error) {
    return { problems: [`cannot be loaded: ${loadFailure(error)}${locationInFile(error, file)}`] };
  }
}

/**
 * Loads the built-in steps (steps/, basename = type) and the custom plugins of the given folders.
 * A custom type may not replace a built-in, and two custom modules may not share a type.
 */
export async function loadPluginRegistry(pluginDirs: readonly string[] = []): Promise<PluginRegistry> {
  const byType = new Map<string, RegisteredPlugin>();
  const problems: string[] = [];

  const builtin = listModules(builtinStepsDir);
  problems.push(...builtin.problems);
  for (const file of builtin.files) {
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
      const listed = listModules(dir);
      problems.push(...listed.problems);
      files = listed.files;
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

/** A call into plugin code that has not settled: what it is, and how to give up on it. */
interface PluginCall {
  what: string;
  abandon(): void;
}

const pluginCallsInFlight = new Set<PluginCall>();

/**
 * `work` (what a plugin's run() returned, or the import of its module) as a promise, watched while it is pending:
 * abandonStalledPluginCalls rejects it with `neverFinished()`. A plain value (a run() that is not async) is taken as
 * it is.
 */
export function watchPluginCall<T>(
  work: T | PromiseLike<T>,
  what: string,
  neverFinished: () => Error,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const call: PluginCall = {
      what,
      abandon: () => {
        pluginCallsInFlight.delete(call);
        reject(neverFinished());
      },
    };
    pluginCallsInFlight.add(call);
    Promise.resolve(work).then(
      (value) => {
        pluginCallsInFlight.delete(call);
        resolve(value);
      },
      (error) => {
        pluginCallsInFlight.delete(call);
        reject(error);
      },
    );
  });
}

/** The plugin of a step type as messages name it: "plugin <its file>", or "the built-in step <type>". */
export function pluginNamed(registry: PluginRegistry, stepType: string): string {
  const source = registry.get(stepType)?.source ?? 'builtin';
  return source === 'builtin' ? `the built-in step ${stepType}` : `plugin ${source}`;
}

/** A step's run() watched by watchPluginCall, named by the step, its plugin's file and the document. */
export function watchStepRun<T>(
  work: T | PromiseLike<T>,
  registry: PluginRegistry,
  step: { name: string; type: string },
  documentId: number | null,
): Promise<T> {
  const plugin = pluginNamed(registry, step.type);
  return watchPluginCall(
    work,
    `step '${step.name}' (${plugin})${documentId === null ? '' : ` on document ${documentId}`}`,
    () =>
      new CpeError(
        ErrorCodes.STEP_FAILED,
        `run() of ${plugin} never finished: nothing left in the process could settle the promise it returned (one that is never resolved nor rejected, or one that waits for an operation that waits for the step, e.g. a statement through ctx.db inside its own ctx.db.transaction() instead of through tx)`,
      ),
  );
}

/**
 * Gives up on every plugin call still pending, each rejected with what says it never finished; returns what they
 * were. For the moment the process has nothing left to wait for (Node's 'beforeExit', cli/main.ts): then nothing can
 * settle them any more, and rejecting them lets the command record each as failed and go on, instead of ending with
 * the run left running.
 */
export function abandonStalledPluginCalls(): string[] {
  const calls = [...pluginCallsInFlight];
  for (const call of calls) call.abandon();
  return calls.map((call) => call.what);
}
