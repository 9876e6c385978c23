import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];

/**
 * A new folder under the system's temporary directory, removed when the test process exits: for the many tests
 * that make a source folder and read it until their last assertion, without a cleanup of their own.
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  if (made.push(dir) === 1) {
    process.on('exit', () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}
