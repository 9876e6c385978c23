import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { type Databases, openDatabases } from '../../../src/db/open.js';
import type { SqlExecutor } from '../../../src/db/sql.js';
import type { Embedder } from '../../../src/embed/types.js';
import { mergeDocumentMetadata } from '../../../src/engine/documents.js';
import type { DocumentRef, Logger, Providers, StepContext } from '../../../src/engine/plugin.js';
import { sha256 } from '../../../src/util/hash.js';
import type { VectorIndex } from '../../../src/vectors/types.js';

export type Backend = 'sqlite' | 'mysql';

/** SQLite always; MariaDB too when CPE_TEST_MYSQL_URL is set (e.g. mysql://root@127.0.0.1:3306). */
/** the embed step's config in these tests: the defaults, into the `documents` collection */
export const embedConfig = { batch_size: 256, max_embed_chars: 800, collection: 'documents' };

export function backends(): Backend[] {
  return process.env.CPE_TEST_MYSQL_URL ? ['sqlite', 'mysql'] : ['sqlite'];
}

export interface TestDatabases {
  dbs: Databases;
  db: SqlExecutor;
  cleanup(): Promise<void>;
}

/** A fresh, migrated ki_content/ki_dev pair (SQLite in a temp folder, or new MariaDB databases dropped after). */
export async function openTestDatabases(backend: Backend): Promise<TestDatabases> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-vectors-'));
  if (backend === 'sqlite') {
    const dbs = await openDatabases({ dataDir });
    return {
      dbs,
      db: dbs.content.sql,
      async cleanup() {
        await dbs.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const server = process.env.CPE_TEST_MYSQL_URL!.replace(/\/+$/, '');
  const prefix = `cpe_t_${randomBytes(4).toString('hex')}`;
  const dbs = await openDatabases({
    dataDir,
    dbUrl: `${server}/${prefix}_content`,
    logDbUrl: `${server}/${prefix}_log`,
  });
  return {
    dbs,
    db: dbs.content.sql,
    async cleanup() {
      await dbs.close();
      const admin = new DataSource({ type: 'mysql', url: `${server}/`, connectorPackage: 'mysql2' } as any);
      await admin.initialize();
      try {
        await admin.query(`DROP DATABASE IF EXISTS \`${prefix}_content\``);
        await admin.query(`DROP DATABASE IF EXISTS \`${prefix}_log\``);
      } finally {
        await admin.destroy();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function insertDocument(
  db: SqlExecutor,
  doc: {
    sourcePath: string;
    title?: string;
    version?: number;
    isLatest?: boolean;
    status?: string;
    previousId?: number;
  },
): Promise<number> {
  const result = await db.run(
    `INSERT INTO documents (filename, source_path, content_hash, title, status, version, is_latest, previous_version_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      path.basename(doc.sourcePath),
      doc.sourcePath,
      sha256(`${doc.sourcePath}:${doc.version ?? 1}`),
      doc.title ?? null,
      doc.status ?? 'processing',
      doc.version ?? 1,
      doc.isLatest === false ? 0 : 1,
      doc.previousId ?? null,
    ],
  );
  return result.insertId;
}

export async function insertChunks(
  db: SqlExecutor,
  documentId: number,
  chunks: Array<string | { content: string; headingPath?: string[]; page?: number }>,
): Promise<number[]> {
  const ids: number[] = [];
  for (const [index, chunk] of chunks.entries()) {
    const c = typeof chunk === 'string' ? { content: chunk } : chunk;
    const result = await db.run(
      `INSERT INTO chunks (document_id, chunk_index, content, content_hash, token_count, heading_path, page_start, page_end)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        documentId,
        index,
        c.content,
        sha256(c.content),
        Math.ceil(c.content.length / 4),
        JSON.stringify(c.headingPath ?? []),
        c.page ?? null,
        c.page ?? null,
      ],
    );
    ids.push(result.insertId);
  }
  return ids;
}

/** Supersedes a document: the old row is no longer the latest, a new version row takes its place. */
export async function newVersion(
  db: SqlExecutor,
  oldId: number,
  sourcePath: string,
  title?: string,
): Promise<number> {
  await db.run('UPDATE documents SET is_latest = 0 WHERE id = ?', [oldId]);
  const [{ version }] = await db.query<{ version: number }>('SELECT version FROM documents WHERE id = ?', [
    oldId,
  ]);
  return insertDocument(db, { sourcePath, title, version: Number(version) + 1, previousId: oldId });
}

export const silentLogger = (): Logger & {
  lines: Array<{ level: string; message: string; context?: unknown }>;
} => {
  const lines: Array<{ level: string; message: string; context?: unknown }> = [];
  const log = (level: string) => (message: string, context?: Record<string, unknown>) => {
    lines.push({ level, message, context });
  };
  return { lines, debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
};

export function makeProviders(embedder: Embedder, index: VectorIndex): Providers {
  return {
    embedder: async () => embedder,
    vectors: async () => index,
    llm: async () => {
      throw new Error('no llm in vector tests');
    },
    vision: async () => {
      throw new Error('no vision in vector tests');
    },
  };
}

export interface CtxOptions<C> {
  db: SqlExecutor;
  providers: Providers;
  config: C;
  type: string;
  document?: Partial<DocumentRef> & { id: number; sourcePath: string };
  stepTypes?: string[];
  /** the configs of the pipeline's steps by type (PipelineInfo.stepConfigs; none by default) */
  stepConfigs?: Record<string, Array<Record<string, unknown>>>;
  signal?: AbortSignal;
}

/** A hand-built step context over a real database, as the engine would pass it. */
export function makeCtx<C>(options: CtxOptions<C>): StepContext<C> & {
  reports: Array<Record<string, number>>;
  log: ReturnType<typeof silentLogger>;
} {
  const reports: Array<Record<string, number>> = [];
  const stepTypes = new Set(options.stepTypes ?? ['detect', 'extract', 'chunk', 'embed', 'analyze']);
  const document: DocumentRef = {
    filename: path.basename(options.document?.sourcePath ?? 'none'),
    contentHash: 'x'.repeat(64),
    version: 1,
    fileSize: 1,
    previousVersionId: null,
    queueId: null,
    action: 'new',
    ...(options.document ?? { id: 0, sourcePath: '' }),
  } as DocumentRef;
  return {
    db: options.db,
    providers: options.providers,
    settings: {},
    config: options.config,
    step: { id: 1, name: options.type, type: options.type, lineageHash: 'test' },
    pipeline: {
      id: 1,
      name: 'Test',
      versionHash: 'test',
      hasStepType: (t) => stepTypes.has(t),
      stepConfigs: (t) => options.stepConfigs?.[t] ?? [],
    },
    run: { id: 1, sourceDir: undefined, force: false },
    log: silentLogger(),
    signal: options.signal ?? new AbortController().signal,
    report: (counts) => {
      reports.push(counts as Record<string, number>);
    },
    skip: (reason) => ({ status: 'skipped', reason }),
    mergeDocumentMetadata: (id, patch) => mergeDocumentMetadata(options.db, id, patch),
    document,
    memo: new Map(),
    reports,
  };
}
