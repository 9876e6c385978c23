import { randomBytes } from 'node:crypto';
import { open, realpath, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { ConfigError, ErrorCodes } from '../../errors.js';
import { exportGraph, type GraphFormat } from '../../knowledge/graph-export.js';
import { type GlobalArgs, globalOptions, withEngineWithoutSteps } from '../engine-options.js';
import { EXIT_OK } from '../exit-codes.js';

interface GraphArgs extends GlobalArgs {
  format: GraphFormat;
  output?: string;
}

/** Why a file could not be written, in words (Node's message names the temporary file, not the one asked for). */
const WRITE_FAILURES: Record<string, string> = {
  ENOENT: 'its folder does not exist',
  ENOTDIR: 'a part of its path is not a folder',
  EISDIR: 'it is a folder',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
};

const cannotWrite = (file: string, error: unknown): ConfigError => {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  const why = WRITE_FAILURES[code] ? `${code}: ${WRITE_FAILURES[code]}` : (error as Error).message;
  return new ConfigError(ErrorCodes.USAGE, `--output ${file} cannot be written (${why})`, { cause: error });
};

/**
 * Writes the export to `file` whole or not at all: into a temporary file in the same folder, renamed over the file
 * once complete. Written in place, a write that failed (a full disk) left a truncated file where the previous good
 * export was, and a reader saw it half written. A link to the file stays a link (the file it leads to is replaced),
 * and a replaced file keeps its permissions. A device or pipe named as the file (`--output=/dev/stdout`) cannot be
 * replaced: it is written as it is. A file that cannot be written is a usage error naming it (exit 2: exit 1 says
 * that documents failed).
 */
export async function writeExportFile(file: string, text: string): Promise<void> {
  const existing = await stat(file).catch(() => undefined);
  if (existing?.isDirectory()) throw cannotWrite(file, Object.assign(new Error(), { code: 'EISDIR' }));
  if (existing && !existing.isFile()) {
    await writeFile(file, text).catch((error) => Promise.reject(cannotWrite(file, error)));
    return;
  }
  const target = existing ? await realpath(file) : file;
  const temp = path.join(
    path.dirname(target),
    `.${path.basename(target)}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    const handle = await open(temp, 'wx');
    try {
      if (existing) await handle.chmod(existing.mode & 0o7777);
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw cannotWrite(file, error);
  }
}

const exportCommand: CommandModule<object, GraphArgs> = {
  command: 'export',
  describe: 'entities, relations and taxonomy from SQL as GraphML or JSON',
  builder: (y) =>
    globalOptions(y)
      .option('format', { choices: ['graphml', 'json'] as const, default: 'json' as GraphFormat })
      .option('output', {
        type: 'string',
        alias: 'o',
        describe: 'file to write (default: standard output)',
      }) as unknown as Argv<GraphArgs>,
  handler: async (args) => {
    process.exitCode = await withEngineWithoutSteps(args, async (engine) => {
      const text = await exportGraph(engine.dbs.content.sql, args.format);
      // an empty --output is refused before (checkOptionValues): it does not mean standard output
      if (args.output !== undefined) await writeExportFile(args.output, text);
      else process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
      return EXIT_OK;
    });
  },
};

export const graphModule: CommandModule = {
  command: 'graph',
  describe: 'the knowledge graph (materialised from SQL)',
  builder: (y) =>
    globalOptions(y).command(exportCommand).demandCommand(1, 'name a subcommand: export (cpe graph --help)'),
  handler: () => undefined,
};
