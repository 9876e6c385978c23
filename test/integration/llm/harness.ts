/**
 * Drives LLM step plugins with a hand-built StepContext over a real database (SQLite, or MariaDB when
 * CPE_TEST_MYSQL_URL is set), with documents/pages/sections/chunks rows inserted directly and the real
 * provider clients pointed at the test servers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Databases, openDatabases } from '../../../src/db/open.js';
import type { SqlExecutor } from '../../../src/db/sql.js';
import { createEmbedder } from '../../../src/embed/create-embedder.js';
import { mergeDocumentMetadata } from '../../../src/engine/documents.js';
import type {
  DocumentRef,
  Providers,
  StepContext,
  StepCounts,
  StepOutcome,
  StepPlugin,
} from '../../../src/engine/plugin.js';
import { type LlmSettings, resetLlmRegistry, resolveLlm, resolveVision } from '../../../src/llm/factory.js';
import { countTokens } from '../../../src/text/tokenizer.js';
import { sha256 } from '../../../src/util/hash.js';
import { createVectorIndex } from '../../../src/vectors/create-vector-index.js';

export interface TestDb {
  dbs: Databases;
  db: SqlExecutor;
  dir: string;
  close(): Promise<void>;
}

/** A fresh migrated database: SQLite in a temp folder, or a throwaway MariaDB database pair. */
export async function openTestDb(): Promise<TestDb> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cpe-llm-'));
  const mysql = process.env.CPE_TEST_MYSQL_URL;
  let names: string[] = [];
  let dbs: Databases;
  if (mysql) {
    const base = `cpe_t_${Math.random().toString(36).slice(2, 10)}`;
    names = [`${base}_content`, `${base}_log`];
    const serverUrl = new URL(mysql);
    serverUrl.pathname = '';
    const server = serverUrl.toString().replace(/\/+$/, '');
    dbs = await openDatabases({
      dataDir: dir,
      dbUrl: `${server}/${names[0]}`,
      logDbUrl: `${server}/${names[1]}`,
    });
  } else {
    dbs = await openDatabases({ dataDir: dir });
  }
  resetLlmRegistry();
  return {
    dbs,
    db: dbs.content.sql,
    dir,
    async close() {
      for (const name of names)
        await dbs.content.sql.run(`DROP DATABASE IF EXISTS \`${name}\``).catch(() => undefined);
      await dbs.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TestChunk {
  content: string;
  headingPath?: string[];
  page?: number;
}

export interface InsertedDocument {
  ref: DocumentRef;
  chunkIds: number[];
}

/** A document version with pages, sections (from the chunks' heading paths) and chunks, inserted directly. */
export async function insertDocument(
  db: SqlExecutor,
  options: {
    filename: string;
    title?: string;
    chunks: TestChunk[];
    version?: number;
    previousVersionId?: number | null;
    pageMetadata?: Record<number, Record<string, unknown>>;
    sourcePath?: string;
    contentHash?: string;
  },
): Promise<InsertedDocument> {
  const text = options.chunks.map((c) => c.content).join('\n\n');
  const hash = options.contentHash ?? sha256(`${options.filename}:${options.version ?? 1}:${text}`);
  const sourcePath = options.sourcePath ?? `/nowhere/${options.filename}`;
  const doc = await db.run(
    `INSERT INTO documents (filename, source_path, file_size, content_hash, mime_type, title, status, version, previous_version_id)
     VALUES (?, ?, ?, ?, 'text/markdown', ?, 'processing', ?, ?)`,
    [
      options.filename,
      sourcePath,
      text.length,
      hash,
      options.title ?? null,
      options.version ?? 1,
      options.previousVersionId ?? null,
    ],
  );
  const documentId = doc.insertId;
  const pages = [...new Set(options.chunks.map((c) => c.page ?? 1))].sort((a, b) => a - b);
  for (const page of pages) {
    await db.run(
      'INSERT INTO document_pages (document_id, page_number, content, metadata) VALUES (?, ?, ?, ?)',
      [
        documentId,
        page,
        options.chunks
          .filter((c) => (c.page ?? 1) === page)
          .map((c) => c.content)
          .join('\n\n'),
        JSON.stringify(options.pageMetadata?.[page] ?? { images: 0, tables: 0 }),
      ],
    );
  }
  // one section per distinct heading path, with the offsets of its chunks
  const chunkIds: number[] = [];
  let offset = 0;
  const sections = new Map<string, { path: string[]; start: number; end: number }>();
  for (const [index, chunk] of options.chunks.entries()) {
    const start = offset;
    const end = start + chunk.content.length;
    offset = end + 2;
    const headingPath = chunk.headingPath ?? [];
    for (let depth = 1; depth <= headingPath.length; depth++) {
      const key = JSON.stringify(headingPath.slice(0, depth));
      const s = sections.get(key) ?? { path: headingPath.slice(0, depth), start, end };
      s.end = end;
      sections.set(key, s);
    }
    const r = await db.run(
      `INSERT INTO chunks (document_id, chunk_index, content, content_hash, token_count, heading_path, start_offset, end_offset, page_start, page_end)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        documentId,
        index,
        chunk.content,
        sha256(chunk.content),
        countTokens(chunk.content),
        JSON.stringify(headingPath),
        start,
        end,
        chunk.page ?? 1,
        chunk.page ?? 1,
      ],
    );
    chunkIds.push(r.insertId);
  }
  let sectionIndex = 0;
  for (const s of sections.values()) {
    await db.run(
      `INSERT INTO document_sections (document_id, section_index, parent_index, level, heading, heading_path, start_offset, end_offset)
       VALUES (?, ?, NULL, ?, ?, ?, ?, ?)`,
      [
        documentId,
        sectionIndex++,
        s.path.length,
        s.path[s.path.length - 1]!,
        JSON.stringify(s.path),
        s.start,
        s.end,
      ],
    );
  }
  return {
    ref: {
      id: documentId,
      sourcePath,
      filename: options.filename,
      contentHash: hash,
      version: options.version ?? 1,
      fileSize: text.length,
      previousVersionId: options.previousVersionId ?? null,
      queueId: null,
      action: (options.version ?? 1) > 1 ? 'update' : 'new',
      // no archive in these tests: the file (when there is one) is read from sourcePath
      archivePath: '',
    },
    chunkIds,
  };
}

export interface LogLine {
  level: string;
  message: string;
  context?: Record<string, unknown>;
}

export interface StepRun {
  outcome: StepOutcome | undefined;
  counts: StepCounts;
  logs: LogLine[];
}

/** Providers over the test servers; embedder/vectors are the embedded (local) ones unless `embedFails`. */
export function testProviders(
  db: SqlExecutor,
  llm: Partial<LlmSettings>,
  options: { embedFails?: boolean } = {},
): Providers {
  const settings: LlmSettings = {
    ollamaHosts: [],
    db,
    limiter: { baseDelayMs: 5, maxDelayMs: 2000 },
    ...llm,
  };
  return {
    async embedder() {
      if (options.embedFails) throw new Error('embedder unavailable (test)');
      return createEmbedder({ ollamaHosts: [] });
    },
    async vectors() {
      return createVectorIndex({ db });
    },
    async llm(o = {}) {
      return resolveLlm(settings, o);
    },
    async vision(o = {}) {
      return resolveVision(settings, o);
    },
  };
}

/** Fills a plugin's config defaults the way the engine does (ajv useDefaults). */
export async function withDefaults(
  plugin: StepPlugin,
  config: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { Ajv } = await import('ajv');
  const ajv = new Ajv({ useDefaults: true, strict: false });
  const copy = structuredClone(config);
  const validate = ajv.compile(plugin.configSchema);
  if (!validate(copy)) throw new Error(`bad config: ${ajv.errorsText(validate.errors)}`);
  return copy;
}

/** Runs one document-scoped plugin on one document with a hand-built context. */
export async function runStep(
  plugin: StepPlugin,
  db: SqlExecutor,
  document: DocumentRef,
  providers: Providers,
  config: Record<string, unknown> = {},
): Promise<StepRun> {
  const logs: LogLine[] = [];
  const counts: StepCounts = {};
  const log = (level: string) => (message: string, context?: Record<string, unknown>) =>
    logs.push({ level, message, context });
  const ctx: StepContext = {
    config: await withDefaults(plugin, config),
    step: { id: 1, name: plugin.type, type: plugin.type, lineageHash: 'test' },
    pipeline: { id: 1, name: 'Test', versionHash: 'test', hasStepType: () => true, stepConfigs: () => [] },
    run: { id: 1, sourceDir: undefined, force: false },
    db,
    providers,
    settings: {},
    log: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
    signal: new AbortController().signal,
    report(more) {
      for (const [key, value] of Object.entries(more)) counts[key] = (counts[key] ?? 0) + (value ?? 0);
    },
    skip: (reason) => ({ status: 'skipped', reason }),
    mergeDocumentMetadata: (id, patch) => mergeDocumentMetadata(db, id, patch),
    document,
    memo: new Map(),
  };
  const outcome = (await plugin.run(ctx)) ?? undefined;
  return { outcome, counts, logs };
}
