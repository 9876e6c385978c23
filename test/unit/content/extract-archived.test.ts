import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { extractArchived } from '../../../src/content/extraction.js';
import { ErrorCodes, FileError } from '../../../src/errors.js';
import { extractIsolated } from '../../../src/extract/isolate.js';

describe('extractArchived (Markdown and text in process, the rest isolated)', function () {
  this.timeout(120000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-extract-archived-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, content: string | Uint8Array) => {
    const file = path.join(dir, name);
    writeFileSync(file, content);
    return file;
  };

  const failure = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (error) {
      return error;
    }
    throw new Error('expected a failure');
  };

  it('gives a Markdown file the same text, blocks and pages as the isolated extraction', async () => {
    const file = write(
      'handbuch.md',
      '# Arbeitsschutz\n\nDie Unterweisung erfolgt z. B. jährlich.\n\n## Pflichten\n\n- Gefährdungsbeurteilung\n- Betriebsanweisung\n',
    );
    const local = await extractArchived(file);
    const isolated = await extractIsolated(file);
    expect(local.format).to.equal('md');
    expect(local.text).to.equal(isolated.text);
    expect(local.blocks).to.deep.equal(isolated.blocks);
    expect(local.pages).to.deep.equal(isolated.pages);
    expect(local.text).to.contain('Die Unterweisung erfolgt z. B. jährlich.');
  });

  it('decodes a Latin-1 text file as the isolated extraction does', async () => {
    const file = write(
      'quellen.txt',
      Buffer.from('Prüfung der Maßnahmen\r\n\r\nÄnderungen bis 31.12.\r\n', 'latin1'),
    );
    const local = await extractArchived(file);
    expect(local.format).to.equal('txt');
    expect(local.text).to.contain('Prüfung der Maßnahmen');
    expect(local.text).to.equal((await extractIsolated(file)).text);
  });

  it('still sniffs the bytes: binary content named .md is a FORMAT_MISMATCH of that file', async () => {
    const file = write(
      'getarnt.md',
      Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(64), Buffer.from('binary')]),
    );
    const error = await failure(extractArchived(file));
    expect(error).to.be.instanceOf(FileError);
    expect((error as FileError).code).to.equal(ErrorCodes.FORMAT_MISMATCH);
  });

  it('an empty text file fails as FILE_EMPTY', async () => {
    const error = await failure(extractArchived(write('leer.txt', '')));
    expect((error as FileError).code).to.equal(ErrorCodes.FILE_EMPTY);
  });
});
