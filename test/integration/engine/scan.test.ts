import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { archivePathFor, INLINE_ARCHIVE_BYTES, readInlineArchive } from '../../../src/engine/archive.js';
import type { Engine } from '../../../src/engine/engine.js';
import { enqueueMany } from '../../../src/engine/queue.js';
import { recordSourceFiles, type ScanOptions, scanSource } from '../../../src/engine/scan.js';
import { sha256 } from '../../../src/util/hash.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';

const files = {
  'a.md': '# Arbeitsschutz\n\nDie Unterweisung findet jährlich statt.\n',
  'b.txt': 'Prüfprotokoll für Leitern und Tritte.\n',
  'sub/c.md': '# Erste Hilfe\n\nVerbandbuch führen.\n',
};

for (const backend of testBackends()) {
  describe(`scanning a source folder (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    let engine: Engine | undefined;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => {
      await engine?.close(); // open pool connections would keep the test process alive
      engine = undefined;
      await setup?.cleanup();
    });
    const open = async () => {
      engine = await setup.open();
      return engine;
    };

    const options = (extra: Partial<ScanOptions> = {}): ScanOptions => ({
      extensions: ['.md', '.txt'],
      followSymlinks: true,
      settleMs: 0,
      ...extra,
    });

    it('reads a file again only when its stat signature changed since it was hashed', async () => {
      const engine = await open();
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder(files);
      let changes = 0;
      const first = await scanSource(db, source, options({ onChange: () => changes++ }));
      // told once, at the first new file, not per file
      expect(changes).to.equal(1);
      expect(
        first.entries.map((e) => [path.relative(source, e.path), e.decision, e.fromStatCache ?? false]),
      ).to.have.deep.members([
        ['a.md', 'new', false],
        ['b.txt', 'new', false],
        ['sub/c.md', 'new', false],
      ]);
      expect(first.entries.find((e) => e.path.endsWith('a.md'))!.hash).to.equal(sha256(files['a.md']));
      await recordSourceFiles(db, first.entries);

      const second = await scanSource(db, source, options());
      expect(second.entries.every((e) => e.fromStatCache)).to.equal(true);
      expect(second.entries.map((e) => e.hash).sort()).to.deep.equal(first.entries.map((e) => e.hash).sort());

      // same size, modification time set back: the change time still moves, so the file is read again
      const a = path.join(source, 'a.md');
      const before = statSync(a);
      const changed = files['a.md']
        .replace('jährlich', 'monatlich')
        .slice(0, Buffer.byteLength(files['a.md']));
      writeFileSync(a, Buffer.from(changed).subarray(0, before.size));
      utimesSync(a, before.atime, before.mtime);
      const third = await scanSource(db, source, options());
      const entryA = third.entries.find((e) => e.path === a)!;
      expect(entryA.fromStatCache ?? false).to.equal(false);
      expect(entryA.hash).to.equal(sha256(readFileSync(a)));
      expect(entryA.hash).to.not.equal(sha256(files['a.md']));
      expect(third.entries.filter((e) => e.fromStatCache)).to.have.length(2);

      // --rehash: every file is read
      const rehashed = await scanSource(db, source, options({ useStatCache: false }));
      expect(rehashed.entries.some((e) => e.fromStatCache)).to.equal(false);
    });

    it('goes on when the change notice throws: no file is reported unreadable for it', async () => {
      const engine = await open();
      const source = makeSourceFolder(files);
      const scan = await scanSource(
        engine.dbs.content.sql,
        source,
        options({
          onChange: () => {
            throw new Error('a listener that fails');
          },
        }),
      );
      expect(scan.unreadable).to.deep.equal([]);
      expect(scan.entries.map((e) => e.decision)).to.deep.equal(['new', 'new', 'new']);
    });

    it('names what it cannot open and why, and scans the rest: names not in UTF-8, broken links, links leaving the folder', async () => {
      const engine = await open();
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder(files);
      const outside = makeSourceFolder({ 'x.md': '# Außerhalb\n' });
      // names with a Latin-1 byte (0xE4, ä): Node lists them with U+FFFD, and no file has that name
      const latin1 = (name: string) =>
        Buffer.concat([Buffer.from(`${source}/`), Buffer.from(name, 'latin1')]);
      writeFileSync(latin1('M\xe4rz.md'), '# März\n');
      mkdirSync(latin1('Ordner\xe4'));
      writeFileSync(Buffer.concat([latin1('Ordner\xe4'), Buffer.from('/d.md')]), '# D\n');
      symlinkSync('/nonexistent-cpe-test/gone.md', path.join(source, 'weg.md'));
      symlinkSync(outside, path.join(source, 'draussen'));
      symlinkSync('..', path.join(source, 'sub', 'zurueck')); // back to the folder itself: not walked twice

      const scan = await scanSource(db, source, options());
      expect(scan.entries.map((e) => path.relative(source, e.path)).sort()).to.deep.equal([
        'a.md',
        'b.txt',
        'sub/c.md',
      ]);
      const notUtf8 = 'the name is not valid UTF-8 and cannot be opened as listed; rename it in UTF-8';
      expect(scan.unreadable.map((u) => [path.relative(source, u.path), u.reason])).to.have.deep.members([
        ['M\uFFFDrz.md', `cannot stat: ${notUtf8}`],
        ['Ordner\uFFFD', `cannot list folder: ${notUtf8}`],
        ['weg.md', 'broken symbolic link (ENOENT)'],
        ['draussen', `symbolic link to ${realpathSync(outside)}, outside the source folder: not followed`],
      ]);

      // links not followed at all: only the names are reported
      const noLinks = await scanSource(db, source, options({ followSymlinks: false }));
      expect(noLinks.unreadable.map((u) => path.relative(source, u.path)).sort()).to.deep.equal([
        'M\uFFFDrz.md',
        'Ordner\uFFFD',
      ]);
    });

    it('scans each folder once, by its real path, whether a link to it sorts before or after it', async () => {
      const engine = await open();
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({
        'teil/a.md': '# Teil\n',
        'teil/innen/b.md': '# Innen\n',
        '.versteckt/c.md': '# Versteckt\n',
      });
      symlinkSync('teil', path.join(source, 'modul')); // sorts before the folder
      symlinkSync('teil', path.join(source, 'zweig')); // and after it
      symlinkSync('../teil/innen', path.join(source, 'teil/aaa')); // a folder below it, before it
      symlinkSync('.versteckt', path.join(source, 'sichtbar')); // the only way to a hidden folder
      symlinkSync('sichtbar', path.join(source, 'auch-sichtbar')); // a second way to it
      const scan = await scanSource(db, source, options());
      expect(scan.entries.map((e) => path.relative(source, e.path)).sort()).to.deep.equal([
        'auch-sichtbar/c.md',
        'teil/a.md',
        'teil/innen/b.md',
      ]);
      expect(scan.unreadable).to.deep.equal([]);
    });

    it('does not keep the signature of a file written just before the scan', async () => {
      const engine = await open();
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder(files);
      const first = await scanSource(db, source, options({ settleMs: 60_000 }));
      expect(first.entries.every((e) => e.settled === false)).to.equal(true);
      await recordSourceFiles(db, first.entries);
      const second = await scanSource(db, source, options());
      expect(second.entries.some((e) => e.fromStatCache)).to.equal(false);
    });

    it('leaves out files changed just before the scan when asked (cpe watch): neither read, queued nor taken for deleted', async () => {
      const engine = await open();
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder(files);
      const changing = path.join(source, 'sub/c.md');
      // a document of it is stored already: a file being rewritten is not a file gone
      await db.run(
        "INSERT INTO documents (filename, source_path, content_hash, status, version, is_latest) VALUES ('c.md', ?, ?, 'done', 1, 1)",
        [changing, sha256(files['sub/c.md'])],
      );
      await new Promise((r) => setTimeout(r, 300));
      writeFileSync(changing, '# Erste Hilfe\n\nVerbandbuch führen, noch nicht fertig');
      const scan = await scanSource(db, source, options({ leaveChangedWithinMs: 200 }));
      expect(scan.leftChanging).to.deep.equal([changing]);
      expect(scan.entries.map((e) => [path.relative(source, e.path), e.decision]).sort()).to.deep.equal([
        ['a.md', 'new'],
        ['b.txt', 'new'],
      ]);
      const later = await scanSource(db, source, options());
      expect(later.entries.find((e) => e.path === changing)?.decision).to.equal('update');
    });

    it('takes a file whose extension it no longer lists for out of scope, not deleted, while it is there', async () => {
      const engine = await open();
      const db = engine.dbs.content.sql;
      const source = makeSourceFolder({
        ...files,
        'd.txt': 'Noch nicht verarbeitet.\n',
        'e.TXT': 'Groß.\n',
        'alt/f.txt': 'Im Unterordner.\n',
      });
      // stored while `.txt` was listed: b.txt, e.TXT and alt/f.txt with documents, d.txt queued and not yet processed
      for (const name of ['b.txt', 'e.TXT', path.join('alt', 'f.txt')])
        await db.run(
          "INSERT INTO documents (filename, source_path, content_hash, status, version, is_latest) VALUES (?, ?, 'h', 'done', 1, 1)",
          [name, path.join(source, name)],
        );
      await enqueueMany(db, [{ path: path.join(source, 'd.txt'), hash: 'h', action: 'new', maxAttempts: 3 }]);
      const decisions = async () =>
        (await scanSource(db, source, options({ extensions: ['.md'] }))).entries
          .map((e) => [path.relative(source, e.path), e.decision])
          .sort();
      expect(await decisions()).to.deep.equal([
        ['a.md', 'new'],
        [path.join('sub', 'c.md'), 'new'],
      ]);
      // really gone: deleted, whatever its extension
      for (const name of ['b.txt', 'd.txt', 'e.TXT', 'alt'])
        rmSync(path.join(source, name), { recursive: true });
      expect(await decisions()).to.deep.equal([
        ['a.md', 'new'],
        [path.join('alt', 'f.txt'), 'delete'],
        ['b.txt', 'delete'],
        ['d.txt', 'delete'],
        ['e.TXT', 'delete'],
        [path.join('sub', 'c.md'), 'new'],
      ]);
    });

    it('archives new files from the bytes it hashed (small ones in SQL), and forgets files gone from the folder', async () => {
      const engine = await open();
      const db = engine.dbs.content.sql;
      // one file above the inline limit, archived as a file
      const large = `# Handbuch\n\n${'Ein Satz über Arbeitsschutz. '.repeat(Math.ceil(INLINE_ARCHIVE_BYTES / 28) + 1)}\n`;
      const source = makeSourceFolder({ ...files, 'large.md': large });
      const archiveDir = path.join(engine.config.dataDir, 'scan-archive');
      const scan = await scanSource(db, source, options({ archiveDir }));
      expect(scan.entries).to.have.length(4);
      for (const entry of scan.entries) {
        const archived = archivePathFor(archiveDir, entry.hash, entry.path);
        const [row] = await db.query<{ byte_size: number; storage_path: string }>(
          'SELECT byte_size, storage_path FROM document_archive WHERE content_hash = ?',
          [entry.hash],
        );
        const inline = await readInlineArchive(db, entry.hash);
        if (entry.size > INLINE_ARCHIVE_BYTES) {
          expect(existsSync(archived), entry.path).to.equal(true);
          expect(sha256(readFileSync(archived))).to.equal(entry.hash);
          expect(row, 'a file archive gets its row with its document').to.equal(undefined);
        } else {
          expect(existsSync(archived), `${entry.path}: no file for bytes archived in SQL`).to.equal(false);
          expect(sha256(inline!)).to.equal(entry.hash);
          expect(Number(row!.byte_size)).to.equal(entry.size);
          expect(row!.storage_path).to.equal(archived);
        }
      }
      await recordSourceFiles(db, scan.entries);
      await recordSourceFiles(db, [{ ...scan.entries[0]!, decision: 'delete' }]);
      const rows = await db.query<{ path: string }>('SELECT path FROM source_files');
      expect(rows.map((r) => r.path)).to.not.include(scan.entries[0]!.path);
      expect(rows).to.have.length(3);
    });
  });
}
