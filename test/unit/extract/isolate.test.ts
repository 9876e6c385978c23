import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { CpeError, ErrorCodes, FileError } from '../../../src/errors.js';
import { extractFile } from '../../../src/extract/extract-file.js';
import { disposeIsolatedWorkers, extractIsolated } from '../../../src/extract/isolate.js';
import { germanHandbookPdf } from './pdf-fixtures.js';

async function failure(promise: Promise<unknown>): Promise<CpeError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(CpeError);
    return error as CpeError;
  }
  throw new Error('expected the extraction to fail');
}

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

  it('cancels through an AbortSignal', async () => {
    const controller = new AbortController();
    const pending = extractIsolated(join(dir, 'handbuch.pdf'), { signal: controller.signal });
    controller.abort();
    const error = await failure(pending);
    expect(error.code).to.equal(ErrorCodes.CANCELLED);
  });
});
