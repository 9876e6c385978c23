import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../../src/config/schema.js';
import { type Engine, openEngine } from '../../src/engine/engine.js';

export type Backend = 'sqlite' | 'mysql';

/** SQLite always; MariaDB too when CPE_TEST_MYSQL_URL (e.g. mysql://root@127.0.0.1:3306) is set. */
export function testBackends(): Backend[] {
  return process.env.CPE_TEST_MYSQL_URL ? ['sqlite', 'mysql'] : ['sqlite'];
}

export interface TestSetup {
  backend: Backend;
  dataDir: string;
  /** environment for a child `cpe` process that uses the same databases */
  env: NodeJS.ProcessEnv;
  flags: Partial<AppConfig>;
  open(extra?: Partial<AppConfig>): Promise<Engine>;
  cleanup(): Promise<void>;
}

const projectRoot = path.resolve(import.meta.dirname, '../..');
export const fixturePlugins = path.join(projectRoot, 'test/fixtures/plugins');

/** A fresh pair of databases (a new data folder, or two new MariaDB databases) for one test file. */
export function createTestSetup(backend: Backend, extra: Partial<AppConfig> = {}): TestSetup {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-test-'));
  const flags: Partial<AppConfig> = { dataDir, retryBaseMs: 20, ...extra };
  const env: NodeJS.ProcessEnv = { ...process.env, CPE_DATA_DIR: dataDir, CPE_RETRY_BASE_MS: '20' };
  delete env.CPE_DB_URL;
  delete env.CPE_LOG_DB_URL;
  let names: string[] = [];
  if (backend === 'mysql') {
    const server = process.env.CPE_TEST_MYSQL_URL!.replace(/\/+$/, '');
    const id = randomBytes(4).toString('hex');
    names = [`cpe_t_${id}_content`, `cpe_t_${id}_dev`];
    flags.dbUrl = `${server}/${names[0]}`;
    flags.logDbUrl = `${server}/${names[1]}`;
    env.CPE_DB_URL = flags.dbUrl;
    env.CPE_LOG_DB_URL = flags.logDbUrl;
  }
  if (extra.plugins) env.CPE_PLUGIN_DIRS = extra.plugins.join(path.delimiter);
  return {
    backend,
    dataDir,
    env,
    flags,
    open: (more = {}) => openEngine({ flags: { ...flags, ...more }, env, cwd: dataDir }),
    async cleanup() {
      if (names.length) {
        const admin = new DataSource({
          type: 'mysql',
          url: `${process.env.CPE_TEST_MYSQL_URL!.replace(/\/+$/, '')}/`,
          connectorPackage: 'mysql2',
        } as any);
        await admin.initialize();
        for (const name of names) await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
        await admin.destroy();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
