import path from 'node:path';
import { type LoadedConfig, loadConfig } from '../config/load.js';
import type { AppConfig } from '../config/schema.js';
import { type Databases, openDatabases } from '../db/open.js';
import { seedDatabase } from '../db/seed.js';
import type { SqlExecutor } from '../db/sql.js';
import { shortHash } from '../util/hash.js';
import { archivePathFor } from './archive.js';
import { currentCheckpointHashes, profileKeysOf } from './checkpoints.js';
import type { Plan } from './plan.js';
import type { Providers } from './plugin.js';
import { createProviders, describeProfile, providerKinds } from './providers.js';
import { enqueueMany, retryFailedItems } from './queue.js';
import { loadPluginRegistry, type PluginRegistry } from './registry.js';
import { retractDocument } from './retract.js';
import { pathsUnder } from './scan.js';

/** One opened cpe: configuration, both databases, the plugin registry and the providers. */
export interface Engine {
  loaded: LoadedConfig;
  config: AppConfig;
  dbs: Databases;
  registry: PluginRegistry;
  providers: Providers;
  /** which parts are embedded and which are real servers */
  profile: Record<string, string>;
  /** settings steps may read (no secrets) */
  settings: Readonly<Record<string, unknown>>;
  archiveDir: string;
  archivePathFor(hash: string, sourcePath: string): string;
  /** removes a document version's derived data (chunks, pages, vectors, knowledge) */
  retract(documentId: number): Promise<void>;
  /**
   * queues done documents under `sourceDir` whose checkpoints do not match the plan, but not those whose file the
   * scan queued a deletion or a new version of. With force, every file's newest version, done or failed: the one
   * the scan found on disk (a failed one is tried again on the item it failed on, as `cpe retry` does)
   */
  requeueStale(plan: Plan, sourceDir: string, force: boolean): Promise<number>;
  close(): Promise<void>;
}

export interface OpenEngineOptions {
  flags?: Partial<AppConfig>;
  configPath?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** apply pending migrations (default true) */
  migrate?: boolean | 'new-only';
  /**
   * load the step plugins (default true); commands that run no steps (status, runs, search, ...) leave them out:
   * importing the 25 built-in step modules was 100-150 ms of their start
   */
  stepPlugins?: boolean;
}

/** The registry of an engine opened without its step plugins: any use of it is a mistake of the caller's. */
const notLoaded = (): never => {
  throw new Error('this engine was opened without its step plugins (openEngine with stepPlugins: false)');
};
const withoutPlugins: PluginRegistry = {
  get: notLoaded,
  all: notLoaded,
  get problems(): string[] {
    return notLoaded();
  },
};

/** A latest document (with force: the newest version of its file) as requeueStale reads it. */
interface LatestDocument {
  id: number;
  source_path: string;
  content_hash: string;
}

/**
 * A document `d` that is the newest version of its file not deleted: the one the scan compares the file on disk with.
 * A forced run queues that one: a newer version that failed is never the latest, and forcing the latest before it
 * processed the older content again (from the archive), said "done", and left the file on disk failed.
 */
const NEWEST_VERSION = `NOT EXISTS (SELECT 1 FROM documents n
  WHERE n.source_path = d.source_path AND n.version > d.version AND n.status <> 'deleted')`;

/** The newest failed (or dead) item of a failed document `d`, which `cpe retry` would queue again; else NULL. */
const FAILED_ITEM = `CASE WHEN d.status = 'failed' THEN (SELECT MAX(q.id) FROM pipeline_queue q
  WHERE q.document_id = d.id AND q.status IN ('failed', 'dead') AND q.action <> 'delete') END`;

/**
 * Which latest documents under `sourceDir` are not to be queued again (requeueStale) because the scan queued what
 * replaces them. A file found gone: its delete item comes first, and would wait for its reprocessing (from the
 * archive) to end before it deletes it, after the run. A file whose content changed: its new version is on the
 * queue (pending, in flight, or failed with a retry to come), and the old one, processed again beside it (with an
 * LLM's tokens), was thrown away as soon as the new one was done, the run counting the file twice. An item of
 * another content that belongs to an older version (a late retry, to be closed as superseded) or failed for good
 * (the old version stays the latest) replaces nothing.
 */
async function replacedOnQueue(
  db: SqlExecutor,
  sourceDir: string,
): Promise<(doc: LatestDocument) => boolean> {
  const under = pathsUnder(db.dialect, 'path', sourceDir);
  const items = await db.query<{ path: string; hash: string; action: string; document_id: number | null }>(
    `SELECT path, hash, action, document_id FROM pipeline_queue
     WHERE (status IN ('pending', 'processing')
            OR (status = 'failed' AND (action = 'delete' OR next_attempt_at IS NOT NULL)))
       AND ${under.sql}`,
    under.params,
  );
  const byPath = new Map<string, typeof items>();
  for (const item of items) byPath.set(item.path, [...(byPath.get(item.path) ?? []), item]);
  return (doc) =>
    (byPath.get(doc.source_path) ?? []).some(
      (item) =>
        item.action === 'delete' ||
        (item.hash !== doc.content_hash &&
          (item.document_id === null || Number(item.document_id) > Number(doc.id))),
    );
}

export async function openEngine(options: OpenEngineOptions = {}): Promise<Engine> {
  const loaded = loadConfig(options);
  const { config, secrets } = loaded;
  const dbs = await openDatabases({
    dataDir: config.dataDir,
    dbUrl: config.dbUrl,
    logDbUrl: config.logDbUrl,
    migrate: options.migrate,
  });
  try {
    // a new ki_content gets the seeded pipelines right away, so the first `cpe run` just works (openDatabases
    // migrates it last, once both databases are open: a start that fails in between would leave it unseeded)
    if (dbs.content.applied.includes(1)) await seedDatabase(dbs.content.sql);
    const registry =
      options.stepPlugins === false ? withoutPlugins : await loadPluginRegistry(config.plugins);
    const providers = createProviders(config, secrets, dbs.content.sql);
    const archiveDir = config.archiveDir ?? path.join(config.dataDir, 'archive');
    const profile = describeProfile(config, secrets, {
      content: dbs.content.location,
      log: dbs.log.location,
    });
    const db = dbs.content.sql;
    const profileKey = shortHash(providerKinds(config, secrets));
    const engine: Engine = {
      loaded,
      config,
      dbs,
      registry,
      providers,
      profile,
      settings: Object.freeze({
        dataDir: config.dataDir,
        archiveDir,
        maxFileMb: config.maxFileMb,
        embedModel: config.embedModel,
        // the key of skipped checkpoints (see providerKinds), and the one before it, from the profile's text: a
        // checkpoint written with it counts while that text is unchanged (no upgrade runs LLM steps again)
        profileKey,
        profileKeys: Object.freeze([profileKey, shortHash({ llm: profile.llm, vision: profile.vision })]),
      }),
      archiveDir,
      archivePathFor: (hash, sourcePath) => archivePathFor(archiveDir, hash, sourcePath),
      retract: (documentId) => retractDocument(db, providers, documentId),
      async requeueStale(plan, sourceDir, force) {
        const docSteps = plan.steps.filter((s) => s.phase === 'document');
        if (docSteps.length === 0) return 0; // nothing of a document is stale for a pipeline that has no document steps
        const statuses = force ? "('done', 'failed')" : "('done')";
        const params: unknown[] = [plan.pipeline.id];
        const matches = docSteps
          .map((s) => {
            const current = currentCheckpointHashes(s.lineageHash, profileKeysOf(engine.settings));
            params.push(s.name, ...current);
            return `(c.step_name = ? AND c.config_hash IN (${current.map(() => '?').join(', ')}))`;
          })
          .join(' OR ');
        const under = pathsUnder(db.dialect, 'd.source_path', sourceDir);
        const stale = await db.query<
          LatestDocument & { version: number; file_size: number; failed_item: number | null }
        >(
          // not a document whose queue item is in flight: finalize marks it done before the run's completion
          // writes the quick steps' checkpoints and closes the item (in one transaction), so between the two it
          // looked stale, and its finished item was opened again
          `SELECT d.id, d.source_path, d.content_hash, d.version, d.file_size, ${force ? FAILED_ITEM : 'NULL'} AS failed_item
           FROM documents d
           WHERE ${force ? NEWEST_VERSION : 'd.is_latest = 1'} AND d.status IN ${statuses} AND ${under.sql}
             AND NOT EXISTS (SELECT 1 FROM pipeline_queue q WHERE q.document_id = d.id AND q.status = 'processing')
             ${
               force
                 ? ''
                 : `AND (SELECT COUNT(*) FROM step_checkpoints c WHERE c.document_id = d.id AND c.pipeline_id = ? AND (${matches})) < ${docSteps.length}`
             }`,
          force ? under.params : [...under.params, ...params],
        );
        if (stale.length === 0) return 0;
        const replaced = await replacedOnQueue(db, sourceDir);
        const requeued = stale.filter((doc) => !replaced(doc));
        // a failed version goes again on the item it failed on, not on one keyed by its version number: a file
        // deleted and back has a version > 1 on a `new` item, and that failure would stay beside a second item
        const failedItems = requeued.flatMap((doc) =>
          doc.failed_item === null ? [] : [Number(doc.failed_item)],
        );
        if (failedItems.length > 0) await retryFailedItems(db, { ids: failedItems, forced: true });
        const enqueued = requeued.filter((doc) => doc.failed_item === null);
        await enqueueMany(
          db,
          enqueued.map((doc) => ({
            path: doc.source_path,
            hash: doc.content_hash,
            action: Number(doc.version) > 1 ? ('update' as const) : ('new' as const),
            documentId: Number(doc.id),
            fileSize: Number(doc.file_size),
            maxAttempts: config.maxAttempts,
            // the request travels with the item: a worker that claims it runs every step again as well
            forced: force,
          })),
        );
        return requeued.length;
      },
      close: () => dbs.close(),
    };
    return engine;
  } catch (error) {
    await dbs.close();
    throw error;
  }
}
