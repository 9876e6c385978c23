import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { CpeError, ErrorCodes, FileError } from '../../../src/errors.js';
import { extractFile } from '../../../src/extract/extract-file.js';
import { disposeIsolatedWorkers, extractIsolated } from '../../../src/extract/isolate.js';
import { germanHandbookPdf, handWrittenPdf } from './pdf-fixtures.js';

async function failure(promise: Promise<unknown>): Promise<CpeError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(CpeError);
    return error as CpeError;
  }
  throw new Error('expected the extraction to fail');
}

/** The ids of the extraction processes whose parent is `pid` (Linux /proc). */
function extractionChildrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // "pid (name) state ppid ...": the name may hold spaces and parentheses
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue;
      // beside other helpers (esbuild's, under tsx)
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('isolate-worker'))
        found.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return found;
}

/** The CPU time a process has used, in seconds (Linux /proc; clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime: the 14th and 15th fields of the line, the 12th and 13th after the name
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const isRunning = (pid: number): boolean => {
  try {
    // a zombie has ended: only its exit status is left for its (new) parent to collect
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('extract/isolate', function () {
  this.timeout(120000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cpe-isolate-'));
    await writeFile(join(dir, 'handbuch.pdf'), await germanHandbookPdf());
    await writeFile(join(dir, 'notiz.txt'), new Uint8Array([0x47, 0x72, 0xf6, 0xdf, 0x65, 0x0a])); // "Größe" in Latin-1
    await writeFile(join(dir, 'leer.md'), '');
    await writeFile(join(dir, 'falsch.pdf'), 'Dies ist kein PDF, nur Text.');
  });

  after(async () => {
    disposeIsolatedWorkers();
    await rm(dir, { recursive: true, force: true });
  });

  it('returns the same document as extractFile in the calling process', async () => {
    const path = join(dir, 'handbuch.pdf');
    const [isolated, local] = await Promise.all([extractIsolated(path), extractFile(path)]);
    expect(isolated).to.deep.equal(local);
    expect(isolated.text).to.include('Qualitätssicherung');
    const txt = await extractIsolated(join(dir, 'notiz.txt'));
    expect(txt.text).to.equal('Größe');
  });

  it('re-creates the extractor error as a FileError with the same code and message', async () => {
    const empty = await failure(extractIsolated(join(dir, 'leer.md')));
    expect(empty).to.be.instanceOf(FileError);
    expect(empty.code).to.equal(ErrorCodes.FILE_EMPTY);
    expect(empty.message).to.equal(`${join(dir, 'leer.md')}: empty file`);
    expect((empty as FileError).file).to.equal(join(dir, 'leer.md'));

    const local = await failure(extractFile(join(dir, 'falsch.pdf')));
    const isolated = await failure(extractIsolated(join(dir, 'falsch.pdf')));
    expect(isolated.code).to.equal(ErrorCodes.FORMAT_MISMATCH);
    expect(isolated.message).to.equal(local.message);
  });

  it('stops an extraction that runs past the timeout, and the next file still works', async () => {
    const path = join(dir, 'handbuch.pdf');
    const error = await failure(extractIsolated(path, { timeoutMs: 1 }));
    expect(error).to.be.instanceOf(FileError);
    expect(error.code).to.equal(ErrorCodes.EXTRACTION_TIMEOUT);
    expect(error.message).to.equal(`${path}: timed out after 0.001 s`);
    const after = await extractIsolated(path);
    expect(after.pages).to.have.length(3);
  });

  it('turns a process above its memory limit into EXTRACTION_MEMORY', async function () {
    if (!existsSync('/proc/self/statm')) this.skip(); // resident-set checks need Linux /proc
    const path = join(dir, 'handbuch.pdf');
    // no Node process fits in 16 MB: the limit is exceeded however small the file
    const error = await failure(extractIsolated(path, { maxMemoryMb: 16 }));
    expect(error.code).to.equal(ErrorCodes.EXTRACTION_MEMORY);
    expect(error.message).to.equal(`${path}: out of memory (limit 16 MB)`);
  });

  it('ends an extraction process busy with a file soon after its parent was killed', async function () {
    if (!existsSync('/proc/self/stat')) this.skip(); // finding the child needs Linux /proc
    // 100,000 nested saves of the graphics state: pdf.js works on them for minutes
    const hanging = join(dir, 'tief.pdf');
    await writeFile(
      hanging,
      handWrittenPdf(`${'q '.repeat(100_000)}BT /F1 12 Tf 72 720 Td (tief) Tj ET${' Q'.repeat(100_000)}`),
    );
    const isolate = fileURLToPath(new URL('../../../src/extract/isolate.ts', import.meta.url));
    // the parent: one small file first (its child is then ready), then the hanging one
    const parentScript = join(dir, 'parent.mts');
    await writeFile(
      parentScript,
      [
        `const { extractIsolated } = await import(${JSON.stringify(isolate)});`,
        `await extractIsolated(${JSON.stringify(join(dir, 'notiz.txt'))});`,
        `extractIsolated(${JSON.stringify(hanging)}, { timeoutMs: 600_000 }).catch(() => undefined);`,
        `console.log('started');`,
      ].join('\n'),
    );
    const parent: ChildProcess = spawn(process.execPath, ['--import', 'tsx', parentScript], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let children: number[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        parent.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('started') && resolve());
        parent.once('exit', () => reject(new Error('the parent ended before it started the extraction')));
      });
      children = extractionChildrenOf(parent.pid!);
      expect(children).to.have.length(1);
      // busy in the file: pdf.js loaded, and in the parser's long stretch without a turn of the event loop (from about
      // 3 s of CPU on; before, 'disconnect' still gets its turn)
      const child = children[0]!;
      const start = cpuSeconds(child);
      while (cpuSeconds(child) - start < 5) await sleep(200);
      parent.kill('SIGKILL');
      const deadline = Date.now() + 5000;
      while (isRunning(child) && Date.now() < deadline) await sleep(100);
      expect(isRunning(child), 'the extraction process outlived its parent').to.equal(false);
    } finally {
      parent.kill('SIGKILL');
      for (const child of children) if (isRunning(child)) process.kill(child, 'SIGKILL');
    }
  });

  it('cancels through an AbortSignal', async () => {
    const controller = new AbortController();
    const pending = extractIsolated(join(dir, 'handbuch.pdf'), { signal: controller.signal });
    controller.abort();
    const error = await failure(pending);
    expect(error.code).to.equal(ErrorCodes.CANCELLED);
  });
});
