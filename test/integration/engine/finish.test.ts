import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { DocumentRow } from '../../../src/db/entities.js';
import type { SqlExecutor } from '../../../src/db/sql.js';
import {
  createDocumentVersion,
  createDocumentVersions,
  mergeDocumentMetadata,
} from '../../../src/engine/documents.js';
import { finishDocuments, retractLeftovers } from '../../../src/engine/finish-document.js';
import { planPipeline } from '../../../src/engine/plan.js';
import { claimQueueItems, enqueue } from '../../../src/engine/queue.js';
import { runPipeline } from '../../../src/engine/runner.js';
import { parseJsonColumn } from '../../../src/util/json.js';
import type { VectorIndex } from '../../../src/vectors/types.js';
import finalize from '../../../steps/finalize.js';
import { createTestSetup, type TestSetup, testBackends } from '../../helpers/backends.js';
import { makeSourceFolder } from '../../helpers/files.js';
import { interceptSql } from '../../helpers/sql.js';

/** Queued and claimed items (by worker w1) for new versions of files (name, hash suffix), as one claim holds them. */
async function claimItems(db: SqlExecutor, files: ReadonlyArray<readonly [string, string | number]>) {
  const items: Array<{ id: number; hash: string; path: string }> = [];
  for (const [name, suffix] of files) {
    const path = `/finish/${name}.md`;
    const hash = `${name}${suffix}`.padEnd(64, '0');
    await enqueue(db, { path, hash, action: 'update', maxAttempts: 3 });
    const [item] = await claimQueueItems(db, 'w1', 1, 60_000, [path]);
    items.push({ id: item!.id, hash, path });
  }
  return items;
}

/** A queued file claimed by w1, with its document row: what the runner holds while it processes a file. */
async function claimedDocument(db: SqlExecutor, name: string, version = 1) {
  const [item] = await claimItems(db, [[name, version]]);
  const doc = await createDocumentVersion(
    db,
    { hash: item!.hash, size: 10, path: `/archive/${item!.hash}`, sourcePath: item!.path },
    { itemId: item!.id, worker: 'w1' },
  );
  return { itemId: item!.id, documentId: doc.id, path: item!.path };
}

/** createDocumentVersions for claimed items, in one transaction as a claim does; the rows and the items' links. */
async function createVersions(
  db: SqlExecutor,
  items: ReadonlyArray<{ id: number; hash: string; path: string }>,
) {
  const rows = (await db.transaction((tx) =>
    createDocumentVersions(
      tx,
      items.map((item) => ({
        file: { hash: item.hash, size: 10, path: `/archive/${item.hash}`, sourcePath: item.path },
        itemId: item.id,
      })),
      'w1',
    ),
  )) as DocumentRow[];
  const linked = await db.query<{ document_id: number }>(
    `SELECT document_id FROM pipeline_queue WHERE id IN (${items.map(() => '?').join(', ')}) ORDER BY id`,
    items.map((i) => i.id),
  );
  return { rows, linked: linked.map((r) => Number(r.document_id)) };
}

/** createDocumentVersions' input for claimed items whose bytes are archived already; `noHash(i)`: item i has none. */
const recordedVersions = (
  items: ReadonlyArray<{ id: number; hash: string; path: string }>,
  noHash: (index: number) => boolean = () => false,
) =>
  items.map((item, i) => ({
    file: {
      hash: noHash(i) ? (null as unknown as string) : item.hash,
      size: 10,
      path: `/archive/${item.hash}`,
      sourcePath: item.path,
      recorded: true,
    },
    itemId: item.id,
  }));

/** finishDocuments' warn where a test expects none. */
const noWarning = (message: string) => expect.fail(`unexpected warning: ${message}`);

const checkpoint = (documentId: number, stepName: string) => ({
  documentId,
  pipelineId: 1,
  stepName,
  stepType: 'work',
  hash: 'h1',
  runId: 1,
});

for (const backend of testBackends()) {
  describe(`completing documents in one transaction (${backend})`, function () {
    this.timeout(60000);
    let setup: TestSetup;
    beforeEach(() => {
      setup = createTestSetup(backend);
    });
    afterEach(async () => setup?.cleanup());

    it('closes the items still held, skips a lost lease, and completes each held document with its checkpoints', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const a = await claimedDocument(db, 'a');
      const b = await claimedDocument(db, 'b');
      const lost = await claimedDocument(db, 'lost');
      const noQueue = await claimedDocument(db, 'plain');
      // another worker took `lost` over (its lease had expired)
      await db.run('UPDATE pipeline_queue SET locked_by = ? WHERE id = ?', ['w2', lost.itemId]);
      await db.run(
        "INSERT INTO document_pages (document_id, page_number, content, created_at) VALUES (?, 1, 'x', '2026-01-01 00:00:00'), (?, 2, 'y', '2026-01-01 00:00:00')",
        [a.documentId, a.documentId],
      );

      const results = await finishDocuments(
        db,
        engine.providers,
        [
          {
            documentId: a.documentId,
            options: {
              queue: { itemId: a.itemId, worker: 'w1' },
              checkpoints: [checkpoint(a.documentId, 's1'), checkpoint(a.documentId, 's2')],
            },
          },
          {
            documentId: lost.documentId,
            options: {
              queue: { itemId: lost.itemId, worker: 'w1' },
              checkpoints: [checkpoint(lost.documentId, 's1')],
            },
          },
          {
            documentId: b.documentId,
            options: {
              queue: { itemId: b.itemId, worker: 'w1' },
              checkpoints: [checkpoint(b.documentId, 's1')],
              completeDocument: false,
            },
          },
          { documentId: noQueue.documentId, options: {} },
        ],
        noWarning,
      );
      expect(results).to.deep.equal([true, false, true, true]);

      const queue = await db.query<{ id: number; status: string; locked_by: string | null }>(
        'SELECT id, status, locked_by FROM pipeline_queue ORDER BY id',
      );
      const byItem = new Map(queue.map((q) => [Number(q.id), q]));
      expect(byItem.get(a.itemId)).to.include({ status: 'done', locked_by: null });
      expect(byItem.get(b.itemId)).to.include({ status: 'done', locked_by: null });
      expect(byItem.get(lost.itemId)).to.include({ status: 'processing', locked_by: 'w2' });
      // the item of the job without a queue item is not touched
      expect(byItem.get(noQueue.itemId)).to.include({ status: 'processing', locked_by: 'w1' });

      const checkpoints = await db.query<{ document_id: number; step_name: string }>(
        'SELECT document_id, step_name FROM step_checkpoints ORDER BY document_id, step_name',
      );
      expect(checkpoints.map((c) => `${Number(c.document_id)}:${c.step_name}`)).to.deep.equal([
        `${a.documentId}:s1`,
        `${a.documentId}:s2`,
        `${b.documentId}:s1`,
      ]);

      const docs = await db.query<{
        id: number;
        status: string;
        is_latest: number;
        metadata: string | null;
        page_count: number | null;
      }>('SELECT id, status, is_latest, metadata, page_count FROM documents ORDER BY id');
      const byDoc = new Map(docs.map((d) => [Number(d.id), d]));
      expect(byDoc.get(a.documentId)).to.include({ status: 'done' });
      expect(Number(byDoc.get(a.documentId)!.is_latest)).to.equal(1);
      expect(Number(byDoc.get(a.documentId)!.page_count)).to.equal(2);
      expect(JSON.parse(byDoc.get(a.documentId)!.metadata!).counts).to.include({ pages: 2, chunks: 0 });
      expect(byDoc.get(noQueue.documentId)).to.include({ status: 'done' });
      // lost lease: nothing written; completeDocument false: the row is left to whoever completed it
      expect(byDoc.get(lost.documentId)).to.include({ status: 'processing' });
      expect(byDoc.get(b.documentId)).to.include({ status: 'processing' });
      await engine.close();
    });

    it('creates the versions of one claim together: numbered after the existing ones, each following the last', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const first = await claimedDocument(db, 'same', 1);
      await db.run("UPDATE documents SET status = 'deleted' WHERE id = ?", [first.documentId]);
      const items = await claimItems(db, [
        ['same', 2],
        ['same', 3],
        ['neu', 1],
      ]);
      const { rows, linked } = await createVersions(db, items);
      const [second, third, other] = rows;
      // the deleted first version still counts for the number, not as the version a new one follows
      expect([second!.version, second!.previous_version_id]).to.deep.equal([2, null]);
      expect([third!.version, third!.previous_version_id]).to.deep.equal([3, second!.id]);
      expect([other!.version, other!.previous_version_id]).to.deep.equal([1, null]);
      expect(linked).to.deep.equal([second!.id, third!.id, other!.id]);
      await engine.close();
    });

    it('creates the versions of distinct files of one claim in one insert, each row matched to its file', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const old = await claimedDocument(db, 'b', 1);
      const items = await claimItems(db, [
        ['c', 9],
        ['b', 9],
        ['a', 9],
      ]);
      const { rows, linked } = await createVersions(db, items);
      const stored = await db.query<{ id: number; source_path: string; content_hash: string }>(
        `SELECT id, source_path, content_hash FROM documents WHERE id IN (${rows.map(() => '?').join(', ')})`,
        rows.map((r) => r.id),
      );
      for (const [i, row] of rows.entries()) {
        const match = stored.find((d) => Number(d.id) === row.id)!;
        expect([match.source_path, match.content_hash]).to.deep.equal([items[i]!.path, items[i]!.hash]);
      }
      expect(rows.map((r) => [r.version, r.previous_version_id])).to.deep.equal([
        [1, null],
        [2, old.documentId],
        [1, null],
      ]);
      expect(linked).to.deep.equal(rows.map((r) => r.id));
      await engine.close();
    });

    it('fails a slice whose insert returns a row it cannot match to a file, and takes its rows out again', async function () {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      if (!db.insertReturning) this.skip(); // row by row there: each insert names its row by id
      const items = await claimItems(db, [
        ['p', 1],
        ['q', 1],
        ['r', 1],
      ]);
      // as a database that stored a path otherwise than given (cut to the column's size) would answer
      const rows = await db.transaction((tx) =>
        createDocumentVersions(
          interceptSql(tx, async (sql, _params, next) => {
            const result = (await next()) as Array<Record<string, unknown>>;
            if (/RETURNING/.test(sql)) result[0]!.source_path = '/finish/cut';
            return result;
          }),
          recordedVersions(items),
          'w1',
        ),
      );
      // the slice's items all get the error (the order of returned rows is not defined: any of the three)
      expect(rows.every((r) => r instanceof Error && r === rows[0])).to.equal(true);
      expect((rows[0] as Error).message).to.match(/^the insert returned no row for \/finish\/[pqr]\.md$/);
      const [{ n }] = await db.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM documents WHERE source_path LIKE '/finish/%'",
      );
      expect(Number(n)).to.equal(0);
      const linked = await db.query<{ document_id: number | null }>(
        `SELECT document_id FROM pipeline_queue WHERE id IN (${items.map(() => '?').join(', ')})`,
        items.map((i) => i.id),
      );
      expect(linked.map((r) => r.document_id)).to.deep.equal([null, null, null]);
      await engine.close();
    });

    it('keeps the rows of the slices of a claim that went in when a later slice fails, and links only those', async function () {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      if (!db.insertReturning) this.skip(); // row by row there: each insert fails alone
      const items = await claimItems(
        db,
        Array.from({ length: 203 }, (_, i) => [`s${i}`, 1] as const),
      );
      // the statement that holds row 201 fails: its content hash is missing
      const rows = await db.transaction((tx) =>
        createDocumentVersions(
          tx,
          recordedVersions(items, (i) => i === 201),
          'w1',
        ),
      );
      // the failing statement's items only: one run of items around the bad one (statements hold 200 rows on
      // MariaDB: 200 + 3; on SQLite 128 + 64 + 11, see rowSlices), the rest inserted
      const failed = rows.flatMap((r, i) => (r instanceof Error ? [i] : []));
      expect(failed).to.include(201);
      expect(failed.length).to.equal(backend === 'mysql' ? 3 : 11);
      expect(failed.at(-1)! - failed[0]! + 1).to.equal(failed.length);
      const [{ n }] = await db.query<{ n: number }>(
        "SELECT COUNT(*) AS n FROM documents WHERE source_path LIKE '/finish/s%'",
      );
      expect(Number(n)).to.equal(203 - failed.length);
      const linked = await db.query<{ document_id: number | null }>(
        `SELECT document_id FROM pipeline_queue WHERE id IN (${items.map(() => '?').join(', ')}) ORDER BY id`,
        items.map((i) => i.id),
      );
      expect(linked.map((r) => (r.document_id === null ? null : Number(r.document_id)))).to.deep.equal(
        rows.map((r) => (r instanceof Error ? null : r.id)),
      );
      await engine.close();
    });

    it('makes a new version latest and the one it replaces not, also when both complete in one batch', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const v1 = await claimedDocument(db, 'doc', 1);
      const [first] = await finishDocuments(
        db,
        engine.providers,
        [{ documentId: v1.documentId, options: { queue: { itemId: v1.itemId, worker: 'w1' } } }],
        noWarning,
      );
      expect(first).to.equal(true);
      const v2 = await claimedDocument(db, 'doc', 2);
      const other = await claimedDocument(db, 'other');
      const results = await finishDocuments(
        db,
        engine.providers,
        [
          { documentId: other.documentId, options: { queue: { itemId: other.itemId, worker: 'w1' } } },
          { documentId: v2.documentId, options: { queue: { itemId: v2.itemId, worker: 'w1' } } },
        ],
        noWarning,
      );
      expect(results).to.deep.equal([true, true]);
      const rows = await db.query<{ id: number; version: number; is_latest: number; status: string }>(
        'SELECT id, version, is_latest, status FROM documents WHERE source_path = ? ORDER BY version',
        [v1.path],
      );
      expect(rows.map((r) => [Number(r.version), Number(r.is_latest)])).to.deep.equal([
        [1, 0],
        [2, 1],
      ]);
      await engine.close();
    });

    it('retracts a replaced version whose retraction failed: when the file completes again, or at the next run', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const chunkOf = (documentId: number) =>
        db.run(
          `INSERT INTO chunks (document_id, chunk_index, content, content_hash, token_count, start_offset, end_offset, status)
           VALUES (?, 0, 'Alter Text.', ?, 3, 0, 10, 'embedded')`,
          [documentId, 'c'.repeat(64)],
        );
      const chunksOf = async (documentId: number) =>
        Number(
          (
            await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM chunks WHERE document_id = ?', [
              documentId,
            ])
          )[0]!.n,
        );
      const complete = (
        doc: { documentId: number; itemId: number },
        providers = engine.providers,
        warn: (message: string) => void = noWarning,
      ) =>
        finishDocuments(
          db,
          providers,
          [{ documentId: doc.documentId, options: { queue: { itemId: doc.itemId, worker: 'w1' } } }],
          warn,
        );
      // the vector index is down while version 2 completes: version 1 is replaced, its retraction fails
      const down = {
        ...engine.providers,
        vectors: async () => {
          throw new Error('vector index down');
        },
      };
      const v1 = await claimedDocument(db, 'rest', 1);
      await complete(v1);
      await chunkOf(v1.documentId);
      const v2 = await claimedDocument(db, 'rest', 2);
      // version 2 is done all the same (its queue item closed: nothing would retry it), with a warning
      const completionWarnings: string[] = [];
      expect(await complete(v2, down, (m) => completionWarnings.push(m))).to.deep.equal([true]);
      expect(completionWarnings).to.have.length(1);
      expect(completionWarnings[0]).to.contain(
        `document ${v1.documentId}, a replaced version, is not retracted yet`,
      );
      expect(completionWarnings[0]).to.contain('vector index down');
      const [done] = await db.query<{ status: string; is_latest: number }>(
        'SELECT status, is_latest FROM documents WHERE id = ?',
        [v2.documentId],
      );
      expect([done!.status, Number(done!.is_latest)]).to.deep.equal(['done', 1]);
      expect(await chunksOf(v1.documentId)).to.equal(1);
      // at the start of the next run (its file unchanged, nothing else would touch it)
      const warnings: string[] = [];
      const retracted = await retractLeftovers(
        db,
        (id) => engine.retract(id),
        (m) => warnings.push(m),
      );
      expect(retracted).to.deep.equal([v1.documentId]);
      expect(await chunksOf(v1.documentId)).to.equal(0);
      expect(warnings).to.deep.equal([]);
      // or when a newer version of the file completes
      await chunkOf(v1.documentId);
      const v3 = await claimedDocument(db, 'rest', 3);
      expect(await complete(v3)).to.deep.equal([true]);
      expect(await chunksOf(v1.documentId)).to.equal(0);
      await engine.close();
    });

    it('the finalize step completes a version whose replaced one it could not retract, with a warning', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const v1 = await claimedDocument(db, 'final', 1);
      await finishDocuments(
        db,
        engine.providers,
        [{ documentId: v1.documentId, options: { queue: { itemId: v1.itemId, worker: 'w1' } } }],
        noWarning,
      );
      await db.run(
        `INSERT INTO chunks (document_id, chunk_index, content, content_hash, token_count, start_offset, end_offset, status)
         VALUES (?, 0, 'Alter Text.', ?, 3, 0, 10, 'embedded')`,
        [v1.documentId, 'c'.repeat(64)],
      );
      const v2 = await claimedDocument(db, 'final', 2);
      const warnings: string[] = [];
      const ctx = {
        db,
        providers: {
          ...engine.providers,
          vectors: async () => {
            throw new Error('vector index down');
          },
        },
        document: { id: v2.documentId },
        log: { warn: (message: string) => warnings.push(message) },
        report: () => undefined,
      };
      await finalize.run(ctx as unknown as Parameters<typeof finalize.run>[0]);
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.contain(`document ${v1.documentId}, a replaced version, is not retracted yet`);
      const rows = await db.query<{ status: string; is_latest: number }>(
        'SELECT status, is_latest FROM documents WHERE source_path = ? ORDER BY version',
        [v1.path],
      );
      expect(rows.map((r) => [r.status, Number(r.is_latest)])).to.deep.equal([
        ['done', 0],
        ['done', 1],
      ]);
      await engine.close();
    });

    it('a run counts a changed file done whose replaced version it could not retract, warns, and retracts it next time', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const plan = await planPipeline(db, engine.registry, 'Standard');
      const source = makeSourceFolder({ 'rest.md': '# Rest\n\nDer erste Text handelt von Pinguinen.\n' });
      expect(await runPipeline(engine, { plan, sourceDir: source, concurrency: 1 })).to.include({
        docsDone: 1,
      });
      writeFileSync(path.join(source, 'rest.md'), '# Rest\n\nDer zweite Text handelt von Flamingos.\n');
      // the index fails to remove a document's points (a retraction), not the stale ones of the version stored
      const index = await engine.providers.vectors();
      const vectors = engine.providers.vectors;
      engine.providers.vectors = async () =>
        new Proxy(index, {
          get: (target, prop, receiver) =>
            prop === 'deleteByDocument'
              ? (...args: Parameters<VectorIndex['deleteByDocument']>) =>
                  args[2]?.keepIds
                    ? target.deleteByDocument(...args)
                    : Promise.reject(new Error('vector index down'))
              : Reflect.get(target, prop, receiver),
        });
      const lines: string[] = [];
      const summary = await runPipeline(engine, {
        plan,
        sourceDir: source,
        concurrency: 1,
        onLog: (_level, line) => lines.push(line),
      });
      expect(summary).to.include({ status: 'ok', docsDone: 1, docsFailed: 0 });
      expect(summary.failures).to.deep.equal([]);
      expect(lines.filter((l) => l.includes('a replaced version, is not retracted yet'))).to.have.length(1);
      const versions = async () =>
        (
          await db.query<{ version: number; is_latest: number; status: string; chunks: number }>(
            `SELECT d.version, d.is_latest, d.status, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS chunks
             FROM documents d ORDER BY d.version`,
          )
        ).map((r) => [Number(r.version), Number(r.is_latest), r.status, Number(r.chunks) > 0]);
      expect(await versions()).to.deep.equal([
        [1, 0, 'done', true],
        [2, 1, 'done', true],
      ]);
      // the index is back: the next run retracts what is left of version 1
      engine.providers.vectors = vectors;
      expect(await runPipeline(engine, { plan, sourceDir: source, concurrency: 1 })).to.include({
        status: 'ok',
        docsFailed: 0,
      });
      expect(await versions()).to.deep.equal([
        [1, 0, 'done', false],
        [2, 1, 'done', true],
      ]);
      await engine.close();
    });

    it("closes the failures of a file's older versions when a version is done, not those of newer versions", async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const v1 = await claimedDocument(db, 'mixed', 1);
      const v2 = await claimedDocument(db, 'mixed', 2);
      const v3 = await claimedDocument(db, 'mixed', 3);
      const other = await claimedDocument(db, 'other', 1);
      // v1 and v3 failed (v3, the newest, while v2 was still being processed), as did another file; two failures
      // that made no version (an unreadable file) came before v2 was made and after it
      const fail = (itemId: number, error: string, at = '2026-01-01 00:00:00.000') =>
        db.run(
          "UPDATE pipeline_queue SET status = 'failed', locked_by = NULL, last_error = ?, finished_at = ? WHERE id = ?",
          [error, at, itemId],
        );
      await fail(v1.itemId, 'v1 broken');
      await fail(v3.itemId, 'v3 broken');
      await fail(other.itemId, 'other broken');
      for (const [hash, at] of [
        ['b'.repeat(64), '2000-01-01 00:00:00.000'],
        ['c'.repeat(64), '2999-01-01 00:00:00.000'],
      ] as const)
        await db.run(
          `INSERT INTO pipeline_queue (path, path_hash, hash, action, status, last_error, finished_at, created_at, updated_at)
           SELECT path, path_hash, ?, 'new', 'failed', ?, ?, created_at, updated_at FROM pipeline_queue WHERE id = ?`,
          [hash, `unread ${at.slice(0, 4)}`, at, v1.itemId],
        );
      await finishDocuments(
        db,
        engine.providers,
        [{ documentId: v2.documentId, options: { queue: { itemId: v2.itemId, worker: 'w1' } } }],
        noWarning,
      );
      const queue = await db.query<{ status: string; last_error: string | null }>(
        'SELECT status, last_error FROM pipeline_queue WHERE last_error IS NOT NULL ORDER BY last_error',
      );
      const done = `superseded: version 2 of ${v1.path} is done; it had failed: `;
      expect(queue.map((q) => [q.status, q.last_error])).to.deep.equal([
        ['failed', 'other broken'],
        ['done', `${done}unread 2000`],
        ['done', `${done}v1 broken`],
        ['failed', 'unread 2999'],
        ['failed', 'v3 broken'],
      ]);
      await engine.close();
    });

    it('leaves a version in flight to its worker when a newer one finishes, then does not make it latest', async () => {
      const engine = await setup.open();
      const db = engine.dbs.content.sql;
      const v1 = await claimedDocument(db, 'late', 1);
      const v2 = await claimedDocument(db, 'late', 2);
      // version 1 is being processed (another worker, a long run of LLM steps): it has pages already
      await db.run(
        "INSERT INTO document_pages (document_id, page_number, content, created_at) VALUES (?, 1, 'alt', '2026-01-01 00:00:00')",
        [v1.documentId],
      );
      await finishDocuments(
        db,
        engine.providers,
        [{ documentId: v2.documentId, options: { queue: { itemId: v2.itemId, worker: 'w1' } } }],
        noWarning,
      );
      // not retracted under its worker (its next step's rows would fail on foreign keys)
      const pages = async () =>
        Number(
          (
            await db.query<{ n: number }>('SELECT COUNT(*) AS n FROM document_pages WHERE document_id = ?', [
              v1.documentId,
            ])
          )[0]!.n,
        );
      expect(await pages()).to.equal(1);
      // version 1 (a retry that ran long, another worker) finishes after version 2
      const [late] = await finishDocuments(
        db,
        engine.providers,
        [{ documentId: v1.documentId, options: { queue: { itemId: v1.itemId, worker: 'w1' } } }],
        noWarning,
      );
      expect(late).to.equal(true);
      const rows = await db.query<{ version: number; is_latest: number; status: string }>(
        'SELECT version, is_latest, status FROM documents WHERE source_path = ? ORDER BY version',
        [v1.path],
      );
      expect(rows.map((r) => [Number(r.version), Number(r.is_latest), r.status])).to.deep.equal([
        [1, 0, 'done'],
        [2, 1, 'done'],
      ]);
      expect(await pages()).to.equal(0);
      await engine.close();
    });

    /** A document's metadata as stored. */
    const storedMetadata = async (db: SqlExecutor, documentId: number) => {
      const [row] = await db.query<{ metadata: unknown }>('SELECT metadata FROM documents WHERE id = ?', [
        documentId,
      ]);
      return parseJsonColumn<Record<string, unknown>>(row?.metadata, {});
    };

    it("keeps every step's keys when steps merge into one document's metadata at the same time", async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        const doc = await claimedDocument(db, 'merged');
        await mergeDocumentMetadata(db, doc.documentId, { tags: ['alt'], format: 'md' });
        // steps that run beside each other: each reads the metadata before any has written it back
        const merged = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            mergeDocumentMetadata(db, doc.documentId, { [`step${i}`]: i }),
          ),
        );
        const expected = {
          tags: ['alt'],
          format: 'md',
          ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`step${i}`, i])),
        };
        expect(await storedMetadata(db, doc.documentId)).to.deep.equal(expected);
        // each merge returns what it stored: the last one everything
        expect(merged.map((m) => Object.keys(m).length).sort((a, b) => a - b)).to.deep.equal(
          Array.from({ length: 12 }, (_, i) => i + 3),
        );
        // a key merged again is replaced, the others stay
        await mergeDocumentMetadata(db, doc.documentId, { tags: ['neu'] });
        expect(await storedMetadata(db, doc.documentId)).to.deep.equal({ ...expected, tags: ['neu'] });
      } finally {
        await engine.close();
      }
    });

    it("keeps a step's metadata key merged while the document is completed", async () => {
      const engine = await setup.open();
      try {
        const db = engine.dbs.content.sql;
        const doc = await claimedDocument(db, 'completing');
        let merging: Promise<unknown> | undefined;
        // the completion has read the row it writes the counts into; a step merges its key now
        const completing = interceptSql(db, async (sql, _params, next) => {
          const result = await next();
          if (!merging && /FROM documents d WHERE d\.id IN/.test(sql)) {
            merging = mergeDocumentMetadata(db, doc.documentId, { glossary_tags: { Feedback: 2 } });
            // the merge waits for the completion's transaction (the row lock, SQLite's one connection): not for ever
            await Promise.race([merging, new Promise((resolve) => setTimeout(resolve, 300))]);
          }
          return result;
        });
        await finishDocuments(
          completing,
          engine.providers,
          [{ documentId: doc.documentId, options: { queue: { itemId: doc.itemId, worker: 'w1' } } }],
          noWarning,
        );
        expect(merging).to.not.equal(undefined);
        await merging;
        const metadata = await storedMetadata(db, doc.documentId);
        expect(metadata).to.have.deep.property('glossary_tags', { Feedback: 2 });
        expect(metadata).to.have.property('counts').that.includes({ pages: 0, chunks: 0 });
      } finally {
        await engine.close();
      }
    });
  });
}
