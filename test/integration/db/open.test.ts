import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { listMigrations } from '../../../src/db/migrate.js';
import { ConfigError } from '../../../src/errors.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { runCli } from '../../helpers/cli.js';

for (const backend of testBackends()) {
  describe(`opening the databases (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => {
      await setup?.cleanup();
    });

    it('refuses a database a newer cpe has migrated, naming the migration it does not know', async () => {
      const engine = await setup.open();
      const newest = listMigrations(backend, 'content').at(-1)!.version;
      await engine.dbs.content.sql.run(
        'INSERT INTO cpe_migrations (version, name, applied_at) VALUES (?, ?, ?)',
        [newest + 1, 'from_the_future', new Date().toISOString()],
      );
      await engine.close();
      const message = `ki_content was migrated by a newer cpe: migration ${newest + 1} 'from_the_future' is unknown to this one, which knows up to ${newest}; use that cpe (or a newer one)`;
      const refused = await setup.open().catch((error: unknown) => error);
      expect(refused).to.be.instanceOf(ConfigError);
      expect((refused as Error).message).to.equal(message);
      // the command says so and exits: the connection it had opened is closed again (a MariaDB pool kept it alive)
      const cli = await runCli(['status'], setup.env, undefined, 30_000);
      expect(cli.signal, 'the process did not exit by itself').to.equal(null);
      expect(cli.code).to.equal(2);
      expect(cli.stderr.trim()).to.equal(`cpe: ${message}`);
    });
  });
}

describe('a MariaDB migration stopped half way', function () {
  this.timeout(60000);
  let setup: TestSetup;
  before(function () {
    if (!process.env.CPE_TEST_MYSQL_URL) this.skip();
  });
  beforeEach(() => {
    setup = createTestSetup('mysql');
  });
  afterEach(async () => setup?.cleanup());

  it('names the statement it stopped at, and resumes there once the cause is gone', async () => {
    const url = new URL(setup.flags.dbUrl!);
    const database = url.pathname.slice(1);
    url.pathname = '/';
    const admin = await mysql.createConnection(url.toString());
    try {
      // a table in the way of the first migration: MySQL commits each DDL statement, so the ones before it stay
      await admin.query(`CREATE DATABASE \`${database}\``);
      await admin.query(`CREATE TABLE \`${database}\`.entities (x INT)`);
      const initial = listMigrations('mysql', 'content')[0]!;
      const statements = initial.sql.split(/;\s*\n/);
      const at = statements.findIndex((s) => /^\s*CREATE TABLE entities \(/m.test(s));
      const refused = (await setup.open().catch((error: unknown) => error)) as Error;
      expect(refused).to.be.instanceOf(Error);
      expect(refused.message).to.contain(
        `migration 1 'initial' stopped at statement ${at + 1} of ${statements.filter((s) => s.trim()).length} (CREATE TABLE entities (): Table 'entities' already exists; the ${at} statement(s) before it are applied and will not be repeated. Remove the cause and run cpe again`,
      );
      // the statement that failed is now applied by hand, as if a stopped attempt had run it without recording it
      await admin.query(`DROP TABLE \`${database}\`.entities`);
      await admin.changeUser({ database });
      await admin.query(statements[at]!.replace(/^\s*--.*$/gm, ''));

      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        const done = await db.query<{ version: number }>(
          'SELECT version FROM cpe_migrations ORDER BY version',
        );
        expect(done.map((r) => Number(r.version))).to.deep.equal(
          listMigrations('mysql', 'content').map((m) => m.version),
        );
        expect(await db.query('SELECT * FROM cpe_migration_progress')).to.deep.equal([]);
        const steps = await db.query<{ name: string }>(
          "SELECT s.name FROM pipeline_steps s JOIN pipeline_configs p ON p.id = s.pipeline_id WHERE p.name = 'Standard' ORDER BY s.sort_order",
        );
        expect(steps.map((s) => s.name)).to.deep.equal(['detect', 'extract', 'chunk', 'embed', 'analyze']);
        const [row] = await db.query<{ n: number }>(
          "SELECT COUNT(*) AS n FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = 'entities'",
        );
        expect(Number(row!.n)).to.be.greaterThan(1);
      } finally {
        await engine.close();
      }
    } finally {
      await admin.end();
    }
  });
});

describe('opening a MariaDB database that cannot be reached', () => {
  it('names the database and its URL without the password, and exits', async function () {
    this.timeout(60000);
    const url = 'mysql://cpe:geheim-123@127.0.0.1:1/ki_content';
    const cli = await runCli(['status'], { ...process.env, CPE_DB_URL: url }, undefined, 30_000);
    expect(cli.signal).to.equal(null);
    expect(cli.code).to.equal(1);
    expect(cli.stderr.trim()).to.equal(
      'cpe: ki_content at mysql://cpe:***@127.0.0.1:1/ki_content: connect ECONNREFUSED 127.0.0.1:1',
    );
  });
});
