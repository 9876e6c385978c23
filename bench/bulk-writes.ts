/**
 * Bulk writes: cpe's write paths for chunks (src/content/chunk-store.ts replaceChunks) and vectors (the embedded
 * index, src/vectors/sql-vector-index.ts upsert: float32 BLOBs, never JSON) against the raw driver writing the
 * same rows in the same run — better-sqlite3 prepared multi-row INSERTs in one transaction, and on MariaDB
 * (CPE_TEST_MYSQL_URL) mysql2 multi-row INSERTs in one transaction. Both sides compute the same column values
 * (content hashes, JSON, vector normalisation), so the ratio is the cost of cpe's layers over the driver.
 * Each contender writes into its own freshly migrated database; rounds are interleaved, medians reported.
 *
 * Standalone: `npx tsx bench/bulk-writes.ts` (BENCH_BULK_ROWS, BENCH_BULK_ROUNDS).
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { CHUNK_COLUMNS, chunkRowValues, replaceChunks } from '../src/content/chunk-store.js';
import { type Databases, openDatabases } from '../src/db/open.js';
import type { SqlExecutor } from '../src/db/sql.js';
import { embedLocalHash } from '../src/embed/local-hash.js';
import { normalizeVector, vectorToBlob } from '../src/embed/vector-blob.js';
import type { ChunkDraft } from '../src/text/chunk.js';
import { sha256 } from '../src/util/hash.js';
import { sqlTime } from '../src/util/time.js';
import { SqlVectorIndex } from '../src/vectors/sql-vector-index.js';
import { generatedDocument, tempDir } from './lib/corpus.js';
import { envNumber, fmt, median, ratio, table } from './lib/stats.js';
import { timed } from './lib/timed.js';

type Backend = 'sqlite' | 'mysql';

const BATCH = 100;

function makeChunks(n: number): ChunkDraft[] {
  const text = generatedDocument(1, n * 900);
  const out: ChunkDraft[] = [];
  for (let i = 0, at = 0; i < n; i++, at += 800) {
    const content = `${text.slice(at, at + 800)} (${i})`;
    out.push({
      index: i,
      content,
      tokenCount: Math.round(content.length / 3.3),
      headingPath: ['Handbuch', `Kapitel ${i >> 4}`],
      metadata: { cut: 'sentence' } as ChunkDraft['metadata'],
      sectionIndex: i >> 4,
      start: at,
      end: at + 800,
      pageStart: 1,
      pageEnd: 1,
    });
  }
  return out;
}

interface Target {
  dbs?: Databases;
  dir?: string;
  mysqlNames?: string[];
}

async function openTarget(backend: Backend): Promise<Target & { db: SqlExecutor; dbs: Databases }> {
  const dir = tempDir('bulk');
  if (backend === 'sqlite') {
    const dbs = await openDatabases({ dataDir: dir });
    return { dbs, dir, db: dbs.content.sql };
  }
  const server = process.env.CPE_TEST_MYSQL_URL!.replace(/\/+$/, '');
  const id = randomBytes(4).toString('hex');
  const names = [`cpe_b_${id}_content`, `cpe_b_${id}_dev`];
  try {
    const dbs = await openDatabases({
      dataDir: dir,
      dbUrl: `${server}/${names[0]}`,
      logDbUrl: `${server}/${names[1]}`,
    });
    return { dbs, dir, db: dbs.content.sql, mysqlNames: names };
  } catch (error) {
    await closeTarget({ dir, mysqlNames: names });
    throw error;
  }
}

async function closeTarget(target: Target): Promise<void> {
  await target.dbs?.close();
  if (target.mysqlNames) {
    const conn = await mysql.createConnection(`${process.env.CPE_TEST_MYSQL_URL!.replace(/\/+$/, '')}/`);
    for (const name of target.mysqlNames) await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
    await conn.end();
  }
  if (target.dir) rmSync(target.dir, { recursive: true, force: true });
}

async function insertDocument(db: SqlExecutor, round: number): Promise<number> {
  const now = sqlTime();
  const { insertId } = await db.run(
    `INSERT INTO documents (filename, source_path, file_size, content_hash, mime_type, status, version, is_latest, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'text/markdown', 'processing', 1, 1, ?, ?)`,
    [
      `bulk-${round}.md`,
      `/bench/bulk-${round}-${randomBytes(4).toString('hex')}.md`,
      1,
      sha256(String(round)),
      now,
      now,
    ],
  );
  return insertId;
}

/** The same rows as replaceChunks writes, computed by the same function. */
const chunkRow = (documentId: number, c: ChunkDraft, now: string) =>
  chunkRowValues(documentId, c, { pipelineVersion: 'bench', stepConfigHash: 'bench' }, now);

type RawPoint = { id: string; vector: Float32Array; chunkId: number };

/** A vector_points row as the raw writers insert it: normalised float32 BLOB and a JSON payload. */
const pointRow = (documentId: number, p: RawPoint) => [
  'bench',
  p.id,
  documentId,
  p.chunkId,
  vectorToBlob(normalizeVector(p.vector)),
  JSON.stringify({ document_id: documentId, chunk_id: p.chunkId }),
];

interface RawWriter {
  chunks(documentId: number, chunks: ChunkDraft[]): Promise<void>;
  vectors(documentId: number, points: RawPoint[]): Promise<void>;
  close(): Promise<void>;
}

/** better-sqlite3 on the connection cpe opened (same file settings: WAL, synchronous NORMAL), no cpe layer. */
function rawSqlite(dbs: Databases): RawWriter {
  const conn = (dbs.content.dataSource.driver as unknown as { databaseConnection: any }).databaseConnection;
  const group = (cols: number) => `(${new Array(cols).fill('?').join(', ')})`;
  const chunkInsert = (n: number) =>
    conn.prepare(
      `INSERT INTO chunks (${CHUNK_COLUMNS.join(', ')}) VALUES ${new Array(n).fill(group(CHUNK_COLUMNS.length)).join(', ')}`,
    );
  const pointInsert = (n: number) =>
    conn.prepare(
      `INSERT INTO vector_points (collection, point_id, document_id, chunk_id, vector, payload) VALUES ${new Array(n).fill(group(6)).join(', ')}`,
    );
  const full = { chunks: chunkInsert(BATCH), points: pointInsert(BATCH) };
  return {
    async chunks(documentId, chunks) {
      const now = sqlTime();
      conn.transaction(() => {
        for (let i = 0; i < chunks.length; i += BATCH) {
          const slice = chunks.slice(i, i + BATCH);
          const stmt = slice.length === BATCH ? full.chunks : chunkInsert(slice.length);
          stmt.run(slice.flatMap((c) => chunkRow(documentId, c, now)));
        }
      })();
    },
    async vectors(documentId, points) {
      conn.transaction(() => {
        for (let i = 0; i < points.length; i += BATCH) {
          const slice = points.slice(i, i + BATCH);
          const stmt = slice.length === BATCH ? full.points : pointInsert(slice.length);
          stmt.run(slice.flatMap((p) => pointRow(documentId, p)));
        }
      })();
    },
    async close() {},
  };
}

/** mysql2 on a connection of its own, multi-row INSERTs in one transaction. */
async function rawMysql(url: string): Promise<RawWriter> {
  const conn = await mysql.createConnection(url);
  const run = async (sql: string, rows: unknown[][]) => {
    await conn.beginTransaction();
    try {
      for (let i = 0; i < rows.length; i += BATCH) {
        const slice = rows.slice(i, i + BATCH);
        await conn.query(sql, [slice]);
      }
      await conn.commit();
    } catch (error) {
      await conn.rollback();
      throw error;
    }
  };
  return {
    async chunks(documentId, chunks) {
      const now = sqlTime();
      await run(
        `INSERT INTO chunks (${CHUNK_COLUMNS.join(', ')}) VALUES ?`,
        chunks.map((c) => chunkRow(documentId, c, now)),
      );
    },
    async vectors(documentId, points) {
      await run(
        'INSERT INTO vector_points (collection, point_id, document_id, chunk_id, vector, payload) VALUES ?',
        points.map((p) => pointRow(documentId, p)),
      );
    },
    close: () => conn.end(),
  };
}

export interface BulkWriteRow {
  backend: Backend;
  kind: 'chunks' | 'vectors';
  rows: number;
  cpeRowsPerS: number;
  rawRowsPerS: number;
}

async function benchBackend(backend: Backend, n: number, rounds: number): Promise<BulkWriteRow[]> {
  const cpeTarget = await openTarget(backend);
  const rawTarget = await openTarget(backend).catch(async (error) => {
    await closeTarget(cpeTarget);
    throw error;
  });
  let raw: RawWriter | undefined;
  try {
    raw =
      backend === 'sqlite'
        ? rawSqlite(rawTarget.dbs)
        : await rawMysql(
            `${process.env.CPE_TEST_MYSQL_URL!.replace(/\/+$/, '')}/${rawTarget.mysqlNames![0]}`,
          );
    const chunks = makeChunks(n);
    const vectors = chunks.map((c) => embedLocalHash(c.content));
    const index = new SqlVectorIndex(cpeTarget.db);
    await index.ensureCollection('bench', {
      size: vectors[0]!.length,
      distance: 'Cosine',
      model: 'local-hash-v1',
    });
    const times = {
      cpeChunks: [] as number[],
      rawChunks: [] as number[],
      cpeVectors: [] as number[],
      rawVectors: [] as number[],
    };
    for (let round = 0; round < rounds + 1; round++) {
      const cpeDoc = await insertDocument(cpeTarget.db, round);
      const rawDoc = await insertDocument(rawTarget.db, round);
      const points = (doc: number) =>
        chunks.map((c, i) => ({ id: `${doc}-${i}`, vector: vectors[i]!, chunkId: c.index }));
      // Each write is timed from a settled start: the write-ahead log copied back and emptied (SQLite), so that
      // neither side's timing includes a background checkpoint of the other's data; cpe and raw take turns
      // going first.
      const settledWriteMs = async (target: { db: SqlExecutor }, write: () => Promise<unknown>) => {
        if (target.db.dialect === 'sqlite') await target.db.query('PRAGMA wal_checkpoint(TRUNCATE)');
        return (await timed(write)).ms;
      };
      const cpeChunkWrite = () =>
        replaceChunks(cpeTarget.db, cpeDoc, chunks, { pipelineVersion: 'bench', stepConfigHash: 'bench' });
      const rawChunkWrite = () => raw!.chunks(rawDoc, chunks);
      const cpeVectorWrite = () =>
        index.upsert(
          'bench',
          points(cpeDoc).map((p) => ({
            id: p.id,
            vector: p.vector,
            payload: { document_id: cpeDoc, chunk_id: p.chunkId },
          })),
        );
      const rawVectorWrite = () => raw!.vectors(rawDoc, points(rawDoc));
      /** [cpe ms, raw ms], cpe's write first in even rounds, the raw driver's in odd ones */
      const inTurn = async (cpeWrite: () => Promise<unknown>, rawWrite: () => Promise<unknown>) => {
        if (round % 2 === 0) {
          const cpe = await settledWriteMs(cpeTarget, cpeWrite);
          return [cpe, await settledWriteMs(rawTarget, rawWrite)] as const;
        }
        const rawMs = await settledWriteMs(rawTarget, rawWrite);
        return [await settledWriteMs(cpeTarget, cpeWrite), rawMs] as const;
      };
      const [cpeChunks, rawChunks] = await inTurn(cpeChunkWrite, rawChunkWrite);
      const [cpeVectors, rawVectors] = await inTurn(cpeVectorWrite, rawVectorWrite);
      if (round === 0) continue; // warm-up
      times.cpeChunks.push(cpeChunks);
      times.rawChunks.push(rawChunks);
      times.cpeVectors.push(cpeVectors);
      times.rawVectors.push(rawVectors);
    }
    const perS = (ms: number[]) => n / (median(ms) / 1000);
    return [
      {
        backend,
        kind: 'chunks',
        rows: n,
        cpeRowsPerS: perS(times.cpeChunks),
        rawRowsPerS: perS(times.rawChunks),
      },
      {
        backend,
        kind: 'vectors',
        rows: n,
        cpeRowsPerS: perS(times.cpeVectors),
        rawRowsPerS: perS(times.rawVectors),
      },
    ];
  } finally {
    await raw?.close();
    await closeTarget(cpeTarget);
    await closeTarget(rawTarget);
  }
}

export async function benchBulkWrites(opts: { rows?: number; rounds?: number } = {}) {
  const n = opts.rows ?? envNumber('BENCH_BULK_ROWS', 5000, 1000);
  // an even number: cpe and the raw driver go first equally often (on MariaDB the second write of a round can run
  // while InnoDB still flushes the first one's pages; with cpe always first it measured 0.92-0.96x, with the order
  // alternating over 5 rounds, 3 of them raw first, 0.71-0.74x, over 6 rounds 0.82-0.95x)
  const rounds = opts.rounds ?? envNumber('BENCH_BULK_ROUNDS', 6, 2);
  const backends: Backend[] = process.env.CPE_TEST_MYSQL_URL ? ['sqlite', 'mysql'] : ['sqlite'];
  const rows: BulkWriteRow[] = [];
  for (const backend of backends) rows.push(...(await benchBackend(backend, n, rounds)));
  const markdown = [
    `**Bulk writes**: ${n} rows per write (chunks of ~800 characters; 1024-dim vectors as float32 BLOBs with a JSON payload), one transaction each, median of ${rounds} interleaved rounds after a warm-up (cpe and raw take turns going first; on SQLite each write starts with the write-ahead log checkpointed, so that no background checkpoint of one side lands in the other's timing); raw = the driver with prepared multi-row INSERTs computing the same values.${backends.length === 1 ? ' MariaDB rows need CPE_TEST_MYSQL_URL.' : ''}`,
    '',
    table(
      ['backend', 'rows', 'cpe rows/s', 'raw driver rows/s', 'cpe/raw'],
      rows.map((r) => [
        `${r.backend} ${r.kind}`,
        r.rows,
        fmt(r.cpeRowsPerS),
        fmt(r.rawRowsPerS),
        ratio(r.cpeRowsPerS, r.rawRowsPerS),
      ]),
    ),
  ].join('\n');
  return { rows, markdown };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  benchBulkWrites().then(
    (r) => console.log(r.markdown),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
