import { expect } from 'chai';
import { migrationLockName } from '../../../src/db/migrate.js';

describe('the MariaDB migration lock name', () => {
  it('names the database, so that data sets on one server do not wait for each other', () => {
    expect(migrationLockName('ki_content', 'content')).to.equal('cpe_migrate_content:ki_content');
    expect(migrationLockName('kunde_a', 'log')).to.not.equal(migrationLockName('kunde_b', 'log'));
  });

  it("keeps to MySQL's 64 characters for a long database name, hashed, one lock per database still", () => {
    const long = (end: string) => `${'d'.repeat(63)}${end}`;
    const a = migrationLockName(long('a'), 'content');
    const b = migrationLockName(long('b'), 'content');
    expect(a).to.match(/^cpe_migrate_content:[0-9a-f]{40}$/);
    expect(a.length).to.be.at.most(64);
    expect(a).to.not.equal(b);
  });
});
