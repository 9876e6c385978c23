import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { listMigrations, migrate, migrationLockName } from '../../../src/db/migrate.js';
import { openDatabases } from '../../../src/db/open.js';
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

    it('names the migration that failed', async () => {
      // a migration not recorded, whose change is there already: applying it again fails
      const forced = listMigrations(backend, 'content').find((m) => m.name === 'queue_forced')!;
      const engine = await setup.open();
      await engine.dbs.content.sql.run('DELETE FROM cpe_migrations WHERE version = ?', [forced.version]);
      await engine.close();
      const refused = (await setup.open().catch((error: unknown) => error)) as Error;
      expect(refused).to.be.instanceOf(Error);
      if (backend === 'sqlite')
        expect(refused.message).to.equal(
          `migration ${forced.version} 'queue_forced' failed: duplicate column name: forced; the migrations of this start were rolled back. Remove the cause and run cpe again`,
        );
      else
        expect(refused.message)
          .to.match(new RegExp(`^migration ${forced.version} 'queue_forced' stopped at statement 1 of 1 `))
          .and.to.contain("Duplicate column name 'forced'");
    });
  });
}

describe('the MariaDB migration lock', function () {
  this.timeout(60000);
  let setup: TestSetup;
  let holder: mysql.Connection | undefined;
  before(function () {
    if (!process.env.CPE_TEST_MYSQL_URL) this.skip();
  });
  beforeEach(() => {
    setup = createTestSetup('mysql');
  });
  afterEach(async () => {
    await holder?.end();
    await setup?.cleanup();
  });

  it("waits while another process migrates the database, for as long as it takes, and not for another database's", async () => {
    const server = new URL(setup.flags.dbUrl!);
    const database = server.pathname.slice(1);
    server.pathname = '/';
    holder = await mysql.createConnection(server.toString());
    for (const url of [setup.flags.dbUrl!, setup.flags.logDbUrl!])
      await holder.query(`CREATE DATABASE \`${new URL(url).pathname.slice(1)}\``);
    const dbs = await openDatabases({ ...setup.flags, dataDir: setup.dataDir, migrate: false });
    try {
      // "another process" migrating this database, and one migrating another data set's database on the server
      const lock = async (name: string) => {
        const [rows] = await holder!.query('SELECT GET_LOCK(?, 0) AS got', [name]);
        expect((rows as Array<{ got: number }>)[0]!.got).to.equal(1);
      };
      await lock(migrationLockName(database, 'content'));
      await lock(migrationLockName('another_data_set', 'content'));
      const waits: string[] = [];
      let finished = false;
      const migrating = migrate(dbs.content.sql, dbs.content.dataSource, 'content', {
        lockWaitSeconds: 1,
        onWait: (message) => waits.push(message),
      }).finally(() => {
        finished = true;
      });
      // several waits of a second each: it asks again, and says so once
      await new Promise((resolve) => setTimeout(resolve, 3500));
      expect(finished, 'migrated while another process held the lock').to.equal(false);
      const [tables] = await holder.query(
        "SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = ? AND table_name = 'cpe_migrations'",
        [database],
      );
      expect(Number((tables as Array<{ n: number }>)[0]!.n), 'migrated beside another process').to.equal(0);
      expect(waits).to.deep.equal([`waiting for another process's migration of ki_content (${database})`]);

      await holder.query('SELECT RELEASE_LOCK(?)', [migrationLockName(database, 'content')]);
      expect(await migrating).to.deep.equal(listMigrations('mysql', 'content').map((m) => m.version));
      expect(waits).to.have.length(1);
      // ki_dev's lock is its own too: taken at once
      const logWaits: string[] = [];
      await migrate(dbs.log.sql, dbs.log.dataSource, 'log', { onWait: (m) => logWaits.push(m) });
      expect(logWaits).to.deep.equal([]);
    } finally {
      await dbs.close();
    }
  });
});

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
