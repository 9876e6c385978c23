import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, ErrorCodes } from '../errors.js';
import { packageRoot } from '../paths.js';

/** Folder of the built-in prompts (German): prompts/<name>.md at the package root. */
export const promptsDir = path.join(packageRoot, 'prompts');

const fileCache = new Map<string, string>();

function readPromptFile(file: string): string {
  let text = fileCache.get(file);
  if (text === undefined) {
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new ConfigError(ErrorCodes.CONFIG_INVALID, `prompt file ${file} cannot be read`, {
        cause: error,
      });
    }
    fileCache.set(file, text);
  }
  return text;
}

/** The built-in template `prompts/<name>.md`. */
export function builtinPrompt(name: string): string {
  return readPromptFile(path.join(promptsDir, `${name}.md`));
}

export interface PromptOverride {
  /** inline template; wins over prompt_file */
  prompt?: string;
  /** path of a template file (relative paths from the working directory) */
  prompt_file?: string;
}

/** The template a step uses: its config's `prompt`, else its `prompt_file`, else the built-in one. */
export function resolvePromptTemplate(name: string, override: PromptOverride = {}): string {
  if (override.prompt !== undefined && override.prompt.trim() !== '') return override.prompt;
  if (override.prompt_file) return readPromptFile(path.resolve(override.prompt_file));
  return builtinPrompt(name);
}

/** Names of the `{{placeholder}}`s in a template, in order of first use. */
export function placeholders(template: string): string[] {
  const names: string[] = [];
  let at = 0;
  for (;;) {
    const open = template.indexOf('{{', at);
    if (open < 0) return names;
    const close = template.indexOf('}}', open + 2);
    if (close < 0) return names;
    const name = template.slice(open + 2, close).trim();
    if (/^[A-Za-z_][\w]*$/.test(name) && !names.includes(name)) names.push(name);
    at = close + 2;
  }
}

/**
 * Checks a template before any call is made: every placeholder must be known, and the required ones (the
 * text the model works on) must be present, or the model would answer about nothing.
 */
export function checkTemplate(
  label: string,
  template: string,
  known: readonly string[],
  required: readonly string[],
): void {
  const used = placeholders(template);
  const unknown = used.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `${label}: unknown placeholder ${unknown.map((n) => `{{${n}}}`).join(', ')} (known: ${known.map((n) => `{{${n}}}`).join(', ')})`,
    );
  }
  const missing = required.filter((name) => !used.includes(name));
  if (missing.length > 0) {
    throw new ConfigError(
      ErrorCodes.CONFIG_INVALID,
      `${label}: the prompt must contain ${missing.map((n) => `{{${n}}}`).join(', ')}`,
    );
  }
}

/** Fills `{{name}}` placeholders; values are inserted verbatim (no re-scanning of inserted text). */
export function fillPrompt(template: string, values: Readonly<Record<string, string | number>>): string {
  let out = '';
  let at = 0;
  for (;;) {
    const open = template.indexOf('{{', at);
    const close = open < 0 ? -1 : template.indexOf('}}', open + 2);
    if (open < 0 || close < 0) return out + template.slice(at);
    const name = template.slice(open + 2, close).trim();
    const value = Object.hasOwn(values, name) ? values[name] : undefined;
    out += template.slice(at, open) + (value === undefined ? template.slice(open, close + 2) : String(value));
    at = close + 2;
  }
}
