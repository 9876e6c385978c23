import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { sqlTime } from '../../../src/util/time.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';
import { makeSourceFolder as makeFolder } from '../../helpers/files.js';

/** The folders this file made, removed at its end. */
const folders: string[] = [];
const makeSourceFolder = (files: Record<string, string>) => {
  const folder = makeFolder(files);
  folders.push(folder, `${folder}-link`);
  return folder;
};
after(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** The JSON a command printed, its exit code checked first. */
async function jsonOf(args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const result = await runCli([...args, '--json'], env);
  expect(result.code, `cpe ${args.join(' ')}: ${result.stderr}`).to.equal(0);
  return JSON.parse(result.stdout);
}

for (const backend of testBackends()) {
  describe(`what cpe prints (${backend})`, function () {
    this.timeout(120000);
    let setup: TestSetup;
    let source: string;
    const withEscape = 'rot\x1b[31mROT\x1b[0m.txt';
    const newline = 'zeile\nzwei.txt';
    before(async () => {
      setup = createTestSetup(backend);
      // the source reached through a link to its folder: documents are stored under the real path
      const real = makeSourceFolder({
        'mit leer/datei eins.md': '# Titel\n\nEin Text über Feedback.\n',
        [withEscape]: 'Feedback Rollen Text eins.\n',
        [newline]: 'Feedback Rollen Text zwei.\n',
      });
      source = `${real}-link`;
      symlinkSync(real, source);
      const run = await runCli(['run', '--pipeline=Standard', `--source=${source}`], setup.env);
      expect(run.code, run.stderr).to.equal(0);
    });
    after(async () => setup?.cleanup());

    it('gives ids, counts, sizes and tokens in --json as numbers, as on SQLite', async () => {
      const [run] = await jsonOf(['runs'], setup.env);
      for (const column of ['id', 'docs_total', 'docs_done', 'steps_ok', 'tokens_in', 'tokens_out'])
        expect(run[column], `runs: ${column}`).to.be.a('number');
      const logs = await jsonOf(['logs'], setup.env);
      expect(logs.run.id).to.be.a('number');
      expect(logs.run.tokens_in).to.be.a('number');
      const step = logs.steps.find((s: any) => s.document_id !== null);
      for (const column of ['id', 'run_id', 'document_id', 'queue_id', 'attempt'])
        expect(step[column], `logs: steps[].${column}`).to.be.a('number');
      expect(logs.log[0].id).to.be.a('number');
      expect(logs.log[0].run_id).to.be.a('number');
      const status = await jsonOf(['status'], setup.env);
      expect(status.runs[0].tokens_in).to.be.a('number');
      expect(status.runs[0].tokens_out).to.be.a('number');
      const doc = await jsonOf(['status', `--doc=${step.document_id}`], setup.env);
      for (const column of ['id', 'version', 'file_size'])
        expect(doc.document[column], `status --doc: document.${column}`).to.be.a('number');
      expect(doc.queue[0].id).to.be.a('number');
      expect(doc.queue[0].attempts).to.be.a('number');
    });

    it('finds a document by the path through the linked source folder it was run with', async () => {
      const given = path.join(source, 'mit leer', 'datei eins.md');
      const result = await runCli(['status', `--doc=${given}`], setup.env);
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.match(/^document \d+: .*\/mit leer\/datei eins\.md\n/);
      expect(result.stdout).to.contain('title Titel');
      const json = await jsonOf(['status', `--doc=${given}`], setup.env);
      // stored under the folder's real path, not the link's
      expect(json.document.source_path).to.not.contain('-link');
      expect(json.document.source_path.endsWith(path.join('mit leer', 'datei eins.md'))).to.equal(true);
    });

    it("shows a file name's control characters escaped in text, keeps them in --json, and titles it on one line", async () => {
      const hits = await jsonOf(['search', 'Feedback Rollen'], setup.env);
      const byName = (name: string) => hits.find((h: any) => path.basename(h.source_path) === name);
      expect(byName(withEscape).document_title).to.equal('rot[31mROT[0m');
      expect(byName(newline).document_title).to.equal('zeile zwei');
      for (const args of [
        ['search', 'Feedback Rollen'],
        ['context', 'Feedback Rollen'],
        ['status', `--doc=${byName(newline).document_id}`],
        ['status', `--doc=${path.join(source, newline)}`],
        ['logs'],
      ]) {
        const result = await runCli(args, setup.env);
        expect(result.code, result.stderr).to.equal(0);
        expect(result.stdout, args.join(' ')).to.not.contain('\x1b');
        expect(result.stdout, args.join(' ')).to.not.match(/zeile\n/);
      }
      const search = await runCli(['search', 'Feedback Rollen'], setup.env);
      expect(search.stdout).to.contain('rot\\x1b[31mROT\\x1b[0m.txt').and.to.contain('zeile\\nzwei.txt');
      const context = await runCli(['context', 'Feedback Rollen'], setup.env);
      expect(context.stdout).to.contain(': zeile zwei]').and.to.contain(': rot[31mROT[0m]');
    });

    it("keeps a failure's reason on the line of its file when the file's name holds a line break", async () => {
      const broken = makeSourceFolder({ 'kaputt\nname.docx': 'kein Word-Dokument, nur Text' });
      const run = await runCli(['run', '--pipeline=Standard', `--source=${broken}`], setup.env);
      expect(run.code, run.stderr).to.equal(1);
      const status = await runCli(['status'], setup.env);
      const doc = await runCli(['status', `--doc=${path.join(broken, 'kaputt\nname.docx')}`], setup.env);
      const logs = await runCli(['logs'], setup.env);
      // the reason was cut at the name's line break: "failed: .../kaputt\nname.docx" and then ".../kaputt" alone
      for (const [what, out] of [
        ['run', run.stdout],
        ['status', status.stdout],
        ['status --doc', doc.stdout],
        ['logs', logs.stdout],
      ]) {
        expect(out, what).to.not.match(/kaputt\n/);
        const line = out.split('\n').find((l) => l.includes('kaputt\\nname.docx: '));
        expect(line, `${what}: ${out}`).to.match(/kaputt\\nname\.docx: .*Word/);
      }
    });

    it('status --doc of a replaced version says it is not the current one', async () => {
      const folder = makeSourceFolder({ 'alt.md': '# Alt\n\nDie erste Fassung.\n' });
      await runCli(['run', '--pipeline=Standard', `--source=${folder}`], setup.env);
      const first = await jsonOf(['status', `--doc=${path.join(folder, 'alt.md')}`], setup.env);
      expect(first.notCurrent).to.equal(null);
      writeFileSync(path.join(folder, 'alt.md'), '# Neu\n\nDie zweite Fassung.\n');
      await runCli(['run', '--pipeline=Standard', `--source=${folder}`], setup.env);
      const second = await jsonOf(['status', `--doc=${path.join(folder, 'alt.md')}`], setup.env);
      const old = await runCli(['status', `--doc=${first.document.id}`], setup.env);
      // it said "status done" and nothing more
      expect(old.stdout).to.contain(
        `  not current: version 1 of ${second.document.source_path} (document ${first.document.id}) is superseded by version 2 (document ${second.document.id})\n`,
      );
      expect(second.notCurrent).to.equal(null);
    });

    it('logs, runs and status show a run whose process died as failed, and why', async () => {
      const engine = await setup.open();
      let id: number;
      try {
        // a run of another machine, silent for an hour: killed without a word
        ({ insertId: id } = await engine.dbs.log.sql.run(
          `INSERT INTO pipeline_runs (pipeline_name, command, host, pid, status, started_at)
           VALUES ('Standard', 'run', 'anderswo', 4242, 'running', ?)`,
          [sqlTime(Date.now() - 3_600_000)],
        ));
      } finally {
        await engine.close();
      }
      // logs read the row as it was: "running", with no reason, while runs closed it as failed
      const logs = await runCli(['logs', String(id)], setup.env);
      expect(logs.code, logs.stderr).to.equal(0);
      expect(logs.stdout.split('\n').slice(0, 2).join('\n')).to.match(
        new RegExp(`^run ${id}: Standard failed, run\n  no heartbeat from process 4242 on anderswo since `),
      );
      const runs = await runCli(['runs'], setup.env);
      expect(runs.stdout).to.match(
        new RegExp(`\nrun ${id} failed: no heartbeat from process 4242 on anderswo`),
      );
      const status = await runCli(['status'], setup.env);
      expect(status.stdout).to.match(
        new RegExp(`\nrun ${id} failed: no heartbeat from process 4242 on anderswo`),
      );
    });

    it('refuses a collection built with another model as a configuration error (exit 2)', async () => {
      const stamp = async (model?: string) => {
        const engine = await setup.open();
        try {
          const sql = engine.dbs.content.sql;
          const where = "backend = 'embedded' AND name = 'documents'";
          const [row] = await sql.query<{ model: string }>(
            `SELECT model FROM vector_collections WHERE ${where}`,
          );
          if (model !== undefined)
            await sql.run(`UPDATE vector_collections SET model = ? WHERE ${where}`, [model]);
          return row!.model;
        } finally {
          await engine.close();
        }
      };
      // as if the collection had been built with another embedder than the one configured now
      const built = await stamp('mxbai-embed-large');
      try {
        for (const command of ['search', 'context']) {
          const result = await runCli([command, 'Feedback Rollen'], setup.env);
          expect(result.code, command).to.equal(2);
          expect(result.stderr, command).to.contain(
            "cpe: collection 'documents' (embedded) was built with mxbai-embed-large (1024 dimensions)",
          );
        }
      } finally {
        await stamp(built);
      }
    });
  });
}

describe('cpe graph export --output', function () {
  this.timeout(120000);
  let setup: TestSetup;
  before(async () => {
    setup = createTestSetup('sqlite');
  });
  after(async () => setup?.cleanup());

  it('replaces the file whole: a reader of the previous export still reads all of it', async () => {
    const folder = makeSourceFolder({});
    const file = path.join(folder, 'graph.json');
    const previous = `${JSON.stringify({ previous: 'good export', padding: 'x'.repeat(4000) })}\n`;
    writeFileSync(file, previous);
    const reader = openSync(file, 'r');
    try {
      const result = await runCli(['graph', 'export', `--output=${file}`], setup.env);
      expect(result.code, result.stderr).to.equal(0);
      const buffer = Buffer.alloc(previous.length + 100);
      const read = readSync(reader, buffer, 0, buffer.length, 0);
      expect(buffer.subarray(0, read).toString()).to.equal(previous);
    } finally {
      closeSync(reader);
    }
    expect(readdirSync(folder)).to.deep.equal(['graph.json']);
  });

  it('is a usage error (exit 2) naming the file when it cannot be written, and leaves no file behind', async () => {
    const folder = makeSourceFolder({});
    const missing = path.join(folder, 'fehlt', 'graph.json');
    const result = await runCli(['graph', 'export', `--output=${missing}`], setup.env);
    expect(result.code).to.equal(2);
    expect(result.stderr).to.contain(
      `--output ${missing} cannot be written (ENOENT: its folder does not exist)`,
    );
    const asFolder = path.join(folder, 'ordner');
    mkdirSync(asFolder);
    const folderResult = await runCli(['graph', 'export', `--output=${asFolder}`], setup.env);
    expect(folderResult.code).to.equal(2);
    expect(folderResult.stderr).to.contain(`--output ${asFolder} cannot be written (EISDIR: it is a folder)`);
    expect(readdirSync(folder)).to.deep.equal(['ordner']);
    expect(readdirSync(asFolder)).to.deep.equal([]);
  });
});

describe('an option given without its value, empty or twice', function () {
  this.timeout(120000);
  let setup: TestSetup;
  before(async () => {
    setup = createTestSetup('sqlite');
  });
  after(async () => setup?.cleanup());

  it('is a usage error (exit 2) naming the option, and the command does not run', async () => {
    for (const [args, message] of [
      [['graph', 'export', '--output='], '--output is empty: give it a value'],
      [['graph', 'export', '--output', ''], '--output is empty: give it a value'],
      [['graph', 'export', '--output'], '--output needs a value'],
      [['graph', 'export', '-o'], '-o needs a value'],
      [['runs', '--last', '--json'], '--last needs a value'],
      [['search', 'Feedback', '--limit', '--json'], '--limit needs a value'],
      [['status', '--json=maybe'], "--json is a switch: give it alone (or =true, =false), not 'maybe'"],
      [['runs', '--last=2', '--last=3'], '--last is given more than once'],
    ] as const) {
      const result = await runCli([...args], setup.env);
      expect(result.code, args.join(' ')).to.equal(2);
      expect(result.stdout, args.join(' ')).to.equal('');
      expect(result.stderr.trim(), args.join(' ')).to.equal(`cpe: ${message}`);
    }
    // what is right still is
    const ok = await runCli(['runs', '--last', '3', '--json=false'], setup.env);
    expect(ok.code, ok.stderr).to.equal(0);
  });
});
