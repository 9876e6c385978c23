/**
 * Floors measured in the same run as the contenders: reading and hashing the folder (what any incremental
 * ingester must at least do to notice changes), and a child process that loads nothing (the RSS of Node plus
 * the TypeScript loader every child starts with).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { IngestArgs, IngestResult } from '../peers/types.js';
import { timed } from './timed.js';

export async function readAndHash(args: IngestArgs): Promise<IngestResult> {
  let documents = 0;
  let bytes = 0;
  const { ms, cpuMs, mainCpuMs } = await timed(async () => {
    for (const entry of await readdir(args.source, { withFileTypes: true, recursive: true })) {
      if (!entry.isFile() || !/\.(md|txt)$/i.test(entry.name)) continue;
      const data = await readFile(path.join(entry.parentPath, entry.name));
      createHash('sha256').update(data).digest('hex');
      documents++;
      bytes += data.byteLength;
    }
  });
  return {
    ms,
    cpuMs,
    mainCpuMs,
    documents,
    bytes,
    chunks: 0,
    vectors: 0,
    notes: 'readFile + SHA-256 per file',
  };
}

export async function idle(): Promise<{ ms: number; cpuMs: number }> {
  return { ms: 0, cpuMs: 0 };
}
