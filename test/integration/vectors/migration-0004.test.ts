import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import mysql from 'mysql2/promise';
import { listMigrations } from '../../../src/db/migrate.js';
import { vectorToBlob } from '../../../src/embed/vector-blob.js';
import { backends } from './helpers.js';

/** better-sqlite3 itself (the driver TypeORM uses; it ships no type declarations). */
interface RawSqlite {
  exec(sql: string): void;
  prepare(sql: string): { run(...params: unknown[]): unknown; all(): unknown[] };
  transaction(fn: () => void): () => void;
  close(): void;
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (file: string) => RawSqlite;

const unit = vectorToBlob(Float32Array.from([0.6, 0.8, 0, 0]));
const other = vectorToBlob(Float32Array.from([0, 0.8, 0.6, 0]));
const hash = (c: string) => c.repeat(64);

/** Rows as a cpe before migration 0004 wrote them: every point holds a copy of its vector. */
const BEFORE_0004 = [
  `INSERT INTO documents (id, filename, source_path, content_hash) VALUES (1, 'a.md', '/src/a.md', '${hash('d')}')`,
  `INSERT INTO chunks (id, document_id, chunk_index, content, content_hash) VALUES
     (1, 1, 0, 'eins', '${hash('1')}'), (2, 1, 1, 'zwei', '${hash('2')}')`,
  `INSERT INTO vector_collections (backend, name, location, model, dimensions, distance) VALUES
     ('embedded', 'documents', 'test', 'm', 4, 'Cosine')`,
  `INSERT INTO chunk_vectors (chunk_id, model, text_hash) VALUES (1, 'm', '${hash('a')}'), (2, 'm', '${hash('b')}')`,
];

async function migrateSqlite(): Promise<Array<Record<string, unknown>>> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-migrate-'));
  const db = new Database(path.join(dir, 'ki_content.sqlite'));
  try {
    const migrations = listMigrations('sqlite', 'content');
    for (const m of migrations.filter((m) => m.version < 4)) db.exec(m.sql);
    for (const sql of BEFORE_0004) db.exec(sql);
    const cache = db.prepare(
      'INSERT INTO embedding_cache (model, text_hash, dimensions, vector) VALUES (?, ?, 4, ?)',
    );
    cache.run('m', hash('a'), unit);
    cache.run('m', hash('b'), unit);
    const point = db.prepare(
      'INSERT INTO vector_points (collection, point_id, document_id, chunk_id, vector, payload) VALUES (?, ?, 1, ?, ?, ?)',
    );
    point.run('documents', 'p1', 1, unit, '{}'); // the same bytes as chunk 1's cached vector
    point.run('documents', 'p2', 2, other, '{}'); // differs from chunk 2's cached vector
    point.run('entities', 'e1', null, unit, '{}'); // no chunk
    db.transaction(() => db.exec(migrations.find((m) => m.version === 4)!.sql))();
    return db
      .prepare('SELECT point_id, vector, vector_model, text_hash FROM vector_points ORDER BY point_id')
      .all() as Array<Record<string, unknown>>;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function migrateMysql(): Promise<Array<Record<string, unknown>>> {
  const server = process.env.CPE_TEST_MYSQL_URL!.replace(/\/+$/, '');
  const name = `cpe_t_${randomBytes(4).toString('hex')}_content`;
  const admin = await mysql.createConnection(`${server}/`);
  await admin.query(`CREATE DATABASE \`${name}\``);
  const db = await mysql.createConnection({ uri: `${server}/${name}`, multipleStatements: true });
  try {
    const migrations = listMigrations('mysql', 'content');
    for (const m of migrations.filter((m) => m.version < 4)) await db.query(m.sql);
    for (const sql of BEFORE_0004) await db.query(sql);
    await db.query('INSERT INTO embedding_cache (model, text_hash, dimensions, vector) VALUES ?', [
      [
        ['m', hash('a'), 4, unit],
        ['m', hash('b'), 4, unit],
      ],
    ]);
    await db.query(
      'INSERT INTO vector_points (collection, point_id, document_id, chunk_id, vector, payload) VALUES ?',
      [
        [
          ['documents', 'p1', 1, 1, unit, '{}'],
          ['documents', 'p2', 1, 2, other, '{}'],
          ['entities', 'e1', 1, null, unit, '{}'],
        ],
      ],
    );
    await db.query(migrations.find((m) => m.version === 4)!.sql);
    const [rows] = await db.query(
      'SELECT point_id, vector, vector_model, text_hash FROM vector_points ORDER BY point_id',
    );
    return rows as Array<Record<string, unknown>>;
  } finally {
    await db.end();
    await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await admin.end();
  }
}

for (const backend of backends()) {
  describe(`migration 0004 on existing data (${backend})`, () => {
    it('turns points that hold a copy of their chunk’s cached vector into references, and keeps the others', async () => {
      const rows = await (backend === 'sqlite' ? migrateSqlite() : migrateMysql());
      const simple = rows.map((r) => ({
        point_id: r.point_id,
        vector: r.vector === null ? null : Buffer.from(r.vector as Uint8Array).toString('hex'),
        vector_model: r.vector_model,
        text_hash: r.text_hash,
      }));
      expect(simple).to.deep.equal([
        { point_id: 'e1', vector: unit.toString('hex'), vector_model: null, text_hash: null },
        { point_id: 'p1', vector: null, vector_model: 'm', text_hash: hash('a') },
        { point_id: 'p2', vector: other.toString('hex'), vector_model: null, text_hash: null },
      ]);
    });
  });
}
