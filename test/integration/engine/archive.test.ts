import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import {
  ArchiveWriter,
  archiveFile,
  archivePathFor,
  findArchived,
  findArchivedMany,
  INLINE_ARCHIVE_BYTES,
  readInlineArchive,
  storeInArchive,
  writeArchiveFile,
} from '../../../src/engine/archive.js';
import type { Engine } from '../../../src/engine/engine.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { sha256 } from '../../../src/util/hash.js';
import { createTestSetup, fixturePlugins, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { insertPipeline } from '../../helpers/pipelines.js';

const files = {
  'a.md': '# Arbeitsschutz\n\nDie Unterweisung findet jährlich statt.\n',
  'b.txt': 'Prüfprotokoll für Leitern und Tritte.\n',
};

/** the files under a folder, recursively (none when it does not exist) */
const filesUnder = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => path.join(e.parentPath, e.name))
    : [];

for (const backend of testBackends()) {
  describe(`the archive of original bytes (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    let engine: Engine;
    beforeEach(async () => {
      setup = createTestSetup(backend, { plugins: [fixturePlugins] });
      engine = await setup.open();
    });
    afterEach(async () => {
      await engine?.close();
      await setup?.cleanup();
    });

    const run = async (pipeline: string, source: string) => {
      const summary = await runPipeline(engine, {
        plan: await planPipeline(engine.dbs.content.sql, engine.registry, pipeline),
        sourceDir: source,
        concurrency: 2,
      });
      expect(summary).to.include({ status: 'ok', docsFailed: 0 });
      const rows = await engine.dbs.log.sql.query<{ counts: string }>(
        "SELECT counts FROM pipeline_step_runs WHERE run_id = ? AND step_name = 'probe' ORDER BY id",
        [summary.runId],
      );
      return rows.map((r) => JSON.parse(r.counts) as Record<string, number>);
    };

    it('keeps small files in SQL: steps get the bytes in memory, and a file only when one asks for its path', async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'in-memory', [
        { name: 'detect', type: 'detect' },
        { name: 'validate', type: 'validate', dependsOn: ['detect'] },
        { name: 'extract', type: 'extract', dependsOn: ['validate'] },
        { name: 'probe', type: 'archive_probe', dependsOn: ['extract'] },
      ]);
      const source = makeSourceFolder(files);
      const probes = await run('in-memory', source);
      expect(probes).to.have.length(2);
      for (const counts of probes) expect(counts).to.include({ in_memory: 1, bytes_match: 1 });
      // Markdown and text are validated and extracted from the bytes: no archive file was written
      expect(filesUnder(engine.archiveDir)).to.deep.equal([]);
      const extracts = await db.query<{ document_id: number }>('SELECT document_id FROM document_extracts');
      expect(extracts).to.have.length(2);

      await insertPipeline(db, 'by-path', [
        { name: 'detect', type: 'detect' },
        { name: 'probe', type: 'archive_probe', config: { read_path: true }, dependsOn: ['detect'] },
      ]);
      const byPath = await run('by-path', source);
      expect(byPath).to.have.length(2);
      for (const counts of byPath) expect(counts).to.include({ in_memory: 1, path_matches: 1 });
      const docs = await db.query<{ content_hash: string; source_path: string }>(
        'SELECT content_hash, source_path FROM documents',
      );
      expect(filesUnder(engine.archiveDir).sort()).to.deep.equal(
        docs.map((d) => engine.archivePathFor(d.content_hash, d.source_path)).sort(),
      );
    });

    it('gives post steps the documents of the run with their archive files, not their bytes', async () => {
      const db = engine.dbs.content.sql;
      await insertPipeline(db, 'post', [
        { name: 'detect', type: 'detect' },
        { name: 'extract', type: 'extract', dependsOn: ['detect'] },
        { name: 'probe', type: 'documents_probe', dependsOn: ['extract'] },
      ]);
      const source = makeSourceFolder({ 'a.md': '# A\n\nEins.\n', 'b.txt': 'Zwei.\n' });
      expect(await run('post', source)).to.deep.equal([{ documents: 2, paths_match: 2, with_bytes: 0 }]);
    });

    it('finds bytes in SQL or in a file, and stores a small source in SQL even where a row without bytes exists', async () => {
      const db = engine.dbs.content.sql;
      const dir = engine.archiveDir;
      const source = makeSourceFolder({
        'x.md': '# X\n\nText.\n',
        'big.md': 'x'.repeat(INLINE_ARCHIVE_BYTES + 1),
      });
      const small = path.join(source, 'x.md');
      const big = path.join(source, 'big.md');
      const smallHash = sha256(readFileSync(small));
      const size = readFileSync(small).length;
      expect(await findArchived(db, dir, smallHash, small, null)).to.equal(undefined);

      // a row from before bytes were kept in SQL: its file was removed since; storing the source fills the row
      await db.run(
        'INSERT INTO document_archive (content_hash, byte_size, storage_path, captured_at) VALUES (?, ?, ?, ?)',
        [smallHash, size, archivePathFor(dir, smallHash, small), '2026-01-01 00:00:00.000'],
      );
      expect(await findArchived(db, dir, smallHash, small, size)).to.equal(undefined);
      expect(await readInlineArchive(db, smallHash)).to.equal(undefined);
      const stored = await storeInArchive(db, dir, small);
      expect(stored).to.deep.equal({
        hash: smallHash,
        size,
        path: archivePathFor(dir, smallHash, small),
        recorded: true,
        bytes: readFileSync(small),
      });
      expect(existsSync(stored.path)).to.equal(false);
      expect((await readInlineArchive(db, smallHash))!.toString()).to.equal('# X\n\nText.\n');
      // found again as stored: with its bytes when asked for them
      expect(await findArchived(db, dir, smallHash, small, size, { bytesUpTo: size })).to.deep.equal(stored);
      const { bytes: _bytes, ...withoutBytes } = stored;
      expect(await findArchived(db, dir, smallHash, small, size)).to.deep.equal(withoutBytes);
      expect(await findArchived(db, dir, smallHash, small, size + 1), 'another size').to.equal(undefined);

      // above the limit: a file, found by its file
      const bigStored = await storeInArchive(db, dir, big);
      expect(bigStored.size).to.equal(INLINE_ARCHIVE_BYTES + 1);
      expect(sha256(readFileSync(bigStored.path))).to.equal(bigStored.hash);
      expect(await readInlineArchive(db, bigStored.hash)).to.equal(undefined);
      // its row is written with the document (recordArchived), not by the copy
      expect(await findArchived(db, dir, bigStored.hash, big, null)).to.deep.equal({
        ...bigStored,
        recorded: false,
      });
    });

    it('finds many files in one lookup, with the bytes of small ones held in SQL when asked for', async () => {
      const db = engine.dbs.content.sql;
      const dir = engine.archiveDir;
      const writer = new ArchiveWriter(db, dir);
      const small = Buffer.from('# Klein\n\nÄrger über Öl.\n');
      const larger = Buffer.alloc(5000, 'x');
      writer.put(sha256(small), '/src/klein.md', small);
      writer.put(sha256(larger), '/src/gross.md', larger);
      await writer.flush();
      const asFile = writeArchiveFile(dir, sha256(Buffer.from('file')), '/src/datei.md', Buffer.from('file'));
      const files = [
        { hash: sha256(small), sourcePath: '/src/klein.md', size: small.length },
        { hash: sha256(larger), sourcePath: '/src/gross.md', size: larger.length },
        { hash: asFile.hash, sourcePath: '/src/datei.md', size: 4 },
        { hash: 'f'.repeat(64), sourcePath: '/src/fehlt.md', size: 1 },
        { hash: sha256(small), sourcePath: '/src/klein.md', size: small.length + 1 },
      ];
      const found = await findArchivedMany(db, dir, files, { bytesUpTo: 1000 });
      expect(found[0]!.bytes!.equals(small)).to.equal(true);
      expect(found[0]).to.include({ recorded: true, size: small.length });
      expect(found[1]).to.include({ recorded: true, size: larger.length });
      expect(found[1]!.bytes, 'above bytesUpTo').to.equal(undefined);
      expect(found[2]).to.deep.equal({ ...asFile, recorded: false });
      expect(found[3], 'not archived').to.equal(undefined);
      expect(found[4], 'another size').to.equal(undefined);
      // without bytesUpTo no bytes come along; each answer is what findArchived gives for the file alone
      const plain = await findArchivedMany(db, dir, files);
      for (const [i, f] of files.entries())
        expect(plain[i]).to.deep.equal(await findArchived(db, dir, f.hash, f.sourcePath, f.size));
      expect(plain[0]!.bytes).to.equal(undefined);
    });

    it('writes a batch of inline rows larger than one statement takes', async () => {
      const db = engine.dbs.content.sql;
      const writer = new ArchiveWriter(db, engine.archiveDir);
      const contents = ['a', 'b', 'c', 'd'].map((c) => Buffer.alloc(600 * 1024, c));
      for (const [i, bytes] of contents.entries()) writer.put(sha256(bytes), `/src/f${i}.md`, bytes);
      await writer.flushIfFull(); // 2.4 MB in 4 rows: kept for the last flush
      expect(await readInlineArchive(db, sha256(contents[0]!))).to.equal(undefined);
      await writer.flush();
      for (const bytes of contents)
        expect((await readInlineArchive(db, sha256(bytes)))!.equals(bytes)).to.equal(true);
      expect(filesUnder(engine.archiveDir)).to.deep.equal([]);
    });

    it('keeps an empty file as empty bytes, not as a missing value', async () => {
      const db = engine.dbs.content.sql;
      const writer = new ArchiveWriter(db, engine.archiveDir);
      const empty = Buffer.alloc(0);
      writer.put(sha256(empty), '/src/leer.md', empty);
      await writer.flush();
      expect((await readInlineArchive(db, sha256(empty)))?.length).to.equal(0);
      expect(await findArchived(db, engine.archiveDir, sha256(empty), '/src/leer.md', 0)).to.deep.equal({
        hash: sha256(empty),
        size: 0,
        path: archivePathFor(engine.archiveDir, sha256(empty), '/src/leer.md'),
        recorded: true,
      });
    });
  });
}

describe('archiveFile', () => {
  it('writes the file from the bytes on the first call, once, and returns its path', () => {
    const dir = makeSourceFolder({});
    const bytes = Buffer.from('Inhalt\n');
    const file = archivePathFor(path.join(dir, 'archive'), sha256(bytes), 'a.md');
    const archivePath = archiveFile(file, bytes);
    expect(existsSync(file)).to.equal(false);
    expect(archivePath()).to.equal(file);
    expect(readFileSync(file, 'utf8')).to.equal('Inhalt\n');
    writeFileSync(file, 'changed'); // not written again
    expect(archivePath()).to.equal(file);
    expect(readFileSync(file, 'utf8')).to.equal('changed');
    // without bytes, the name of an archive file that exists already
    const existing = writeArchiveFile(path.join(dir, 'archive'), sha256('b'), 'b.md', Buffer.from('b'));
    expect(archiveFile(existing.path, undefined)()).to.equal(existing.path);
  });
});
