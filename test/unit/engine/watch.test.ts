import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { ignoredName, listableFile } from '../../../src/engine/scan.js';
import { sameFolder, watchFolder } from '../../../src/engine/watch.js';

const until = async (check: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('watching a folder', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-watch-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('passes once more after the first pass, and goes on while folders inside come and go', async () => {
    const batches: string[][] = [];
    const controller = new AbortController();
    const watching = watchFolder(dir, {
      debounceMs: 20,
      settleMs: 30,
      signal: controller.signal,
      onBatch: async (paths) => {
        batches.push(paths);
      },
      first: async () => undefined,
    });
    // the pass after the first one: for files written just before the watch began
    await until(() => batches.some((b) => b.includes(dir)));
    // folders made and removed quickly (unzip, rsync, git) end Node's recursive watcher now and then
    for (let i = 0; i < 30; i++) {
      const sub = path.join(dir, `tmp${i}`);
      mkdirSync(path.join(sub, 'a', 'b'), { recursive: true });
      writeFileSync(path.join(sub, 'a', 'b', 'x.md'), '# x');
      rmSync(sub, { recursive: true, force: true });
    }
    await new Promise((r) => setTimeout(r, 300));
    writeFileSync(path.join(dir, 'danach.md'), '# Danach\n');
    await until(() => batches.some((b) => b.includes(path.join(dir, 'danach.md'))));
    controller.abort();
    await watching;
  });

  /** a watch of dir whose batches are collected; stop() ends it */
  const watching = () => {
    const changed = new Set<string>();
    const controller = new AbortController();
    const done = watchFolder(dir, {
      debounceMs: 20,
      settleMs: 30,
      signal: controller.signal,
      onBatch: async (paths) => {
        for (const p of paths) changed.add(p);
      },
      first: async () => undefined,
    });
    return {
      changed,
      /** waits until `file` is reported, then forgets what was reported */
      async saw(file: string) {
        await until(() => changed.has(file));
        changed.clear();
      },
      async stop() {
        controller.abort();
        await done;
      },
    };
  };

  it('sees a file saved in place after it was saved by renaming a copy over it (as editors do)', async () => {
    const file = path.join(dir, 'notiz.txt');
    writeFileSync(file, 'eins');
    const watch = watching();
    await watch.saw(dir);
    writeFileSync(path.join(dir, 'notiz.tmp'), 'zwei');
    renameSync(path.join(dir, 'notiz.tmp'), file);
    await watch.saw(file);
    // Node's recursive watcher (Linux) kept watching the replaced file's inode: this write raised nothing
    writeFileSync(file, 'drei');
    await watch.saw(file);
    writeFileSync(file, 'vier');
    await watch.saw(file);
    await watch.stop();
  });

  it('goes on watching a folder renamed to a name that begins with its old one, and the folders in it', async () => {
    mkdirSync(path.join(dir, 'kurs', 'teil'), { recursive: true });
    writeFileSync(path.join(dir, 'kurs', 'k.txt'), 'Kurs');
    const watch = watching();
    await watch.saw(dir);
    renameSync(path.join(dir, 'kurs'), path.join(dir, 'kurs2'));
    await watch.saw(path.join(dir, 'kurs2'));
    // Node's recursive watcher forgot every path that began with `kurs` when `kurs` went: `kurs2` too
    writeFileSync(path.join(dir, 'kurs2', 'k.txt'), 'geändert');
    await watch.saw(path.join(dir, 'kurs2', 'k.txt'));
    writeFileSync(path.join(dir, 'kurs2', 'teil', 'neu.txt'), 'neu');
    await watch.saw(path.join(dir, 'kurs2', 'teil', 'neu.txt'));
    // and the old name, made again, is a folder of its own
    mkdirSync(path.join(dir, 'kurs'));
    await watch.saw(path.join(dir, 'kurs'));
    writeFileSync(path.join(dir, 'kurs', 'wieder.txt'), 'wieder');
    await watch.saw(path.join(dir, 'kurs', 'wieder.txt'));
    await watch.stop();
  });

  it('reports thousands of files written into a new folder', async () => {
    const watch = watching();
    await watch.saw(dir);
    mkdirSync(path.join(dir, 'bulk'));
    await watch.saw(path.join(dir, 'bulk'));
    for (let i = 0; i < 3000; i++) {
      writeFileSync(path.join(dir, 'bulk', `f${i}.txt`), `Dokument ${i}`);
      if (i % 100 === 99) await new Promise((r) => setTimeout(r, 0));
    }
    // (Node's recursive watcher read the whole folder again on each event: ~19 s here, against under 1 s)
    const bulk = path.join(dir, 'bulk', 'f');
    await until(() => [...watch.changed].filter((p) => p.startsWith(bulk)).length === 3000, 60_000);
    await watch.stop();
  });

  it('ends, saying so, when the source folder itself goes away, once the pass in progress is done', async () => {
    const controller = new AbortController();
    let passDone = false;
    const watching = watchFolder(dir, {
      debounceMs: 20,
      settleMs: 30,
      rootCheckMs: 50,
      signal: controller.signal,
      onBatch: async () => undefined,
      // a pass that takes a while: its documents finish before the watch ends (and the databases close)
      first: async () => {
        await new Promise((r) => setTimeout(r, 400));
        passDone = true;
      },
    });
    renameSync(dir, `${dir}-weg`);
    try {
      const error = await watching.then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error?.message).to.equal(`source folder ${dir} is gone (removed or renamed): the watch stops`);
      expect(passDone, 'the watch ended before its pass').to.equal(true);
    } finally {
      controller.abort();
      rmSync(`${dir}-weg`, { recursive: true, force: true });
    }
  });

  it('tells a source folder removed and made again from itself, also when it gets the freed inode number back', () => {
    const before = statSync(dir);
    expect(sameFolder(before, statSync(dir))).to.equal(true);
    // ext4 often hands a new folder the inode number just freed: the same number, another folder
    const again = { ...before, birthtimeMs: before.birthtimeMs + 1 } as typeof before;
    expect(sameFolder(before, again)).to.equal(false);
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    expect(sameFolder(before, statSync(dir))).to.equal(false);
    // a file system without birth times: the inode decides
    const noBirth = { ...before, birthtimeMs: 0 } as typeof before;
    expect(sameFolder(noBirth, { ...before, birthtimeMs: 5 } as typeof before)).to.equal(true);
    expect(sameFolder(noBirth, { ...before, ino: before.ino + 1 } as typeof before)).to.equal(false);
  });

  it('tells a file a scan would list from one it would pass over (a link, a lock file, nothing there)', () => {
    writeFileSync(path.join(dir, 'handbuch.md'), '# H');
    writeFileSync(path.join(dir, '~$handbuch.docx'), 'lock');
    symlinkSync(path.join(dir, 'handbuch.md'), path.join(dir, 'verweis.md'));
    expect(
      ['handbuch.md', '~$handbuch.docx', 'verweis.md', 'fehlt.md'].map((f) =>
        listableFile(path.join(dir, f)),
      ),
    ).to.deep.equal([true, false, false, false]);
  });

  it('passes over hidden files and the lock files office programs keep beside open documents', () => {
    expect(['.git', '~$Handbuch.docx', '~WRL0001.tmp'].map(ignoredName)).to.deep.equal([true, true, true]);
    expect(['Handbuch.docx', 'Über~$.md'].map(ignoredName)).to.deep.equal([false, false]);
  });
});
