import { mkdirSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { openEngine } from '../../../src/engine/engine.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';

for (const backend of testBackends()) {
  describe(`a first start whose ki_dev cannot be opened (${backend})`, () => {
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => setup?.cleanup());

    it('leaves ki_content to the next start, which seeds its pipelines', async function () {
      this.timeout(60000);
      // SQLite: a folder where the ki_dev file goes; MariaDB: a ki_dev on a server that is not there (CPE_LOG_DB_URL
      // forgotten, the server's ki_dev not allowed: what fails is opening ki_dev after ki_content)
      const blocked = path.join(setup.dataDir, 'ki_dev.sqlite');
      const broken = backend === 'sqlite' ? {} : { logDbUrl: 'mysql://root@127.0.0.1:1/cpe_first_start_dev' };
      if (backend === 'sqlite') mkdirSync(blocked);
      let failure: unknown;
      try {
        await (await openEngine({ flags: { ...setup.flags, ...broken }, env: setup.env })).close();
      } catch (error) {
        failure = error;
      }
      expect(String((failure as Error)?.message)).to.match(/ki_dev/);
      if (backend === 'sqlite') rmdirSync(blocked);

      const engine = await setup.open();
      try {
        const pipelines = await engine.dbs.content.sql.query<{ name: string }>(
          'SELECT name FROM pipeline_configs ORDER BY name',
        );
        expect(pipelines.map((p) => p.name)).to.include.members(['Schulungsunterlagen', 'Standard']);
      } finally {
        await engine.close();
      }
    });
  });
}
