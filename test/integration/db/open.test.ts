import { expect } from 'chai';
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
