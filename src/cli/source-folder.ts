import { statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, ErrorCodes } from '../errors.js';

/**
 * The folder a scanning command was given, resolved; a configuration error (exit 2) before any run starts when it
 * is missing or not a folder (found by the scan, it failed the run's detect step: exit 1, the reason three times).
 */
export function sourceFolder(source: string): string {
  const dir = path.resolve(source);
  const info = statSync(dir, { throwIfNoEntry: false });
  if (!info) throw new ConfigError(ErrorCodes.USAGE, `source folder ${dir} does not exist`);
  if (!info.isDirectory()) throw new ConfigError(ErrorCodes.USAGE, `source ${dir} is not a folder`);
  return dir;
}
