import { type ChunkRow, embedChunks } from '../embed/embed-chunks.js';
import { DEFAULT_MAX_EMBED_CHARS } from '../embed/prepare.js';
import type { Logger } from '../engine/plugin.js';
import { CpeError, describeError, ErrorCodes } from '../errors.js';
import { type EntityRow, entityPointId, storeEntityPoints } from '../knowledge/entities.js';
import { ENTITY_COLLECTION } from '../knowledge/retract.js';
import { collectionMismatch } from '../vectors/collection-stamp.js';
import { chunkPointId } from '../vectors/point-id.js';
import { SqlVectorIndex } from '../vectors/sql-vector-index.js';
import { storeDocumentPoints } from '../vectors/store-points.js';
import { embedSettings, pointCollectionsByPipeline } from './embed-settings.js';
import { embedderOptions, type RetrievalServices } from './search.js';

export interface VerifyOptions {
  repair?: boolean;
  collection?: string;
  /** used when repair has to embed chunks (default 800, as the embed step) */
  maxEmbedChars?: number;
  /** the pipeline's embed model (see SearchOptions) */
  embedModel?: string;
  /**
   * the pipeline whose runs' chunk collection (embedSettings) the `entities` collection is checked along with
   * (default: the default pipeline, as `cpe run` picks it)
   */
  pipeline?: string;
  signal?: AbortSignal;
  log?: Logger;
}

export interface VerifyCounts {
  /**
   * chunks of the collection's current documents (is_latest = 1, not deleted; see collectionDocuments), not
   * counting chunks marked failed
   */
  expected: number;
  /** points in the collection */
  points: number;
  /** expected chunks without a point */
  missing: number;
  /** of those, chunks that have no vector for the model yet */
  unembedded: number;
  /** points whose document or chunk does not exist in SQL */
  orphans: number;
  /** points of superseded versions or deleted documents */
  stale: number;
  /**
   * points holding the vector of a chunk that was replaced since (the document re-chunked, its new vectors not
   * stored): the point's place is the new chunk's, its vector the old text's
   */
  outdated: number;
  /** points of versions still on their way (newer than the latest of their file, not done): left alone */
  inFlight: number;
  /** points of current documents that are another collection's: the pipelines that processed them store them there */
  foreign: number;
  /** points whose vector has the wrong size */
  wrongSize: number;
  /** chunks whose qdrant_id does not name their point */
  wrongChunkRefs: number;
  /**
   * chunks the embedder rejected (status failed): reported, not counted as disagreement; repair embeds them again
   * (an earlier cpe marked chunks failed on a server's outage, too)
   */
  failedChunks: number;
  /**
   * entities without a point in the `entities` collection while entity embedding is on (the collection exists, or
   * entities name points in it): their embedding failed (the step keeps entities in SQL and only warns), or their
   * points are gone from the index (the collection dropped or emptied behind cpe's back)
   */
  entitiesWithoutPoint: number;
  /**
   * points in the `entities` collection that no entity has (none names it in entities.qdrant_id, none would store
   * it: entityPointId of its type and name): their entity was deleted and removing the point failed
   */
  entityOrphans: number;
}

export interface VerifyReport {
  /** SQL and the index agree (after repair, when repairing) */
  ok: boolean;
  backend: 'embedded' | 'qdrant';
  location: string;
  collection: string;
  model: string;
  dimensions: number;
  collectionExists: boolean;
  collectionModel?: string;
  collectionDimensions?: number;
  /** a model or size mismatch: not repairable in place */
  mismatch?: string;
  /**
   * the `entities` collection built with another model or size than the configured embedder's, which entity points
   * are embedded with: one of the problems, and how to rebuild it (repair stores no entity point meanwhile)
   */
  entityMismatch?: string;
  /** why the `entities` collection was not checked: it is checked along with the runs' chunk collection only */
  entitiesNotChecked?: string;
  counts: VerifyCounts;
  /** one line per kind of disagreement */
  problems: string[];
  repaired?: {
    /** points deleted: from the collection, and from `entities` (entityPointsDeleted) */
    pointsDeleted: number;
    documentsRestored: number;
    chunksEmbedded: number;
    entitiesStored: number;
    /** of those, the `entities` collection's (entityOrphans) */
    entityPointsDeleted: number;
    /** of the chunks marked failed, the ones the embedder gave a vector this time (status embedded now) */
    failedChunksEmbedded: number;
  };
  /** the state after repair */
  after?: VerifyReport;
}

const EXAMPLES = 5;

/**
 * Compares SQL (the truth) with the vector index: missing points, orphan points, points of stale versions, points
 * of another collection's documents, wrong vector sizes, a collection built with another model; with repair, makes
 * them agree (deletes what should not be there, embeds and stores what is missing) and verifies again. What should
 * be there is the points of the collection's own documents (collectionDocuments), not of every document: two
 * pipelines may store into two collections.
 *
 * The index is listed before SQL is read, and may be while a run goes on: a run commits a document's and its chunks'
 * rows before it stores their points, so every point listed has its rows in what is read after. Read the other way
 * round, a document a run made and stored between the two reads was unknown, its points orphans, and repair deleted
 * them. (What a run stores after the listing may show as missing, and repair stores it again: the same points.)
 */
export async function verifyIndex(
  services: RetrievalServices,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const collection = options.collection ?? 'documents';
  if (collection === ENTITY_COLLECTION) {
    // its points belong to no document: checked as chunks' points, every one would be an orphan, and repair would
    // delete them all
    throw new CpeError(
      ErrorCodes.USAGE,
      `collection '${ENTITY_COLLECTION}' holds entity points, not chunk points: it is verified and repaired along ` +
        'with the documents collection (cpe verify, cpe verify --repair)',
    );
  }
  const [embedder, index] = await Promise.all([
    services.providers.embedder(embedderOptions(options.embedModel)),
    services.providers.vectors(),
  ]);
  const info = await index.describeCollection(collection);
  const report: VerifyReport = {
    ok: true,
    backend: index.kind,
    location: index.location,
    collection,
    model: embedder.model,
    dimensions: embedder.dimensions,
    collectionExists: info.exists,
    collectionModel: info.model,
    collectionDimensions: info.dimensions,
    counts: {
      expected: 0,
      points: 0,
      missing: 0,
      unembedded: 0,
      orphans: 0,
      stale: 0,
      outdated: 0,
      inFlight: 0,
      foreign: 0,
      wrongSize: 0,
      wrongChunkRefs: 0,
      failedChunks: 0,
      entitiesWithoutPoint: 0,
      entityOrphans: 0,
    },
    problems: [],
  };
  if (
    info.exists &&
    ((info.model !== undefined && info.model !== embedder.model) || info.dimensions !== embedder.dimensions)
  ) {
    report.mismatch = collectionMismatch(index.kind, collection, info, {
      model: embedder.model,
      size: embedder.dimensions,
      distance: 'Cosine',
    }).message;
    report.problems.push(report.mismatch);
    report.ok = false;
    return report;
  }

  const { db } = services;
  // Entity points belong to the data set, not to one chunk collection: they are checked along with the collection
  // its runs store chunks into, whatever its name (a new one after a model switch, or one named so that data sets
  // share a Qdrant), and not again with every other collection verified by name.
  const runsCollection = (await embedSettings(db, options.pipeline)).collection;
  const checkEntities = collection === runsCollection;
  if (!checkEntities) {
    report.entitiesNotChecked =
      `entities not checked: the '${ENTITY_COLLECTION}' collection is checked along with '${runsCollection}', ` +
      "the collection the pipeline's runs store chunks into (cpe verify without --collection checks both)";
  }
  const points = info.exists ? await index.listPoints(collection) : [];
  const documents = await db.query<{
    id: number;
    source_path: string;
    version: number;
    is_latest: number;
    status: string;
  }>('SELECT id, source_path, version, is_latest, status FROM documents');
  const current = new Set(
    documents.filter((d) => Number(d.is_latest) === 1 && d.status !== 'deleted').map((d) => Number(d.id)),
  );
  // a version newer than the latest of its file and not done is on its way (pending, processing, or failed and
  // waiting for a retry): its points are kept for when it completes, as the run keeps them
  const latestVersion = new Map<string, number>();
  for (const d of documents)
    if (Number(d.is_latest) === 1) latestVersion.set(d.source_path, Number(d.version));
  const inFlight = new Set(
    documents
      .filter(
        (d) =>
          Number(d.is_latest) !== 1 &&
          d.status !== 'deleted' &&
          Number(d.version) > (latestVersion.get(d.source_path) ?? 0),
      )
      .map((d) => Number(d.id)),
  );
  const known = new Set(documents.map((d) => Number(d.id)));
  const own = await collectionDocuments(db, collection, points);
  const chunks = await db.query<{
    id: number;
    document_id: number;
    chunk_index: number;
    status: string;
    qdrant_id: string | null;
    has_vector: number | null;
  }>(
    `SELECT c.id, c.document_id, c.chunk_index, c.status, c.qdrant_id, cv.chunk_id AS has_vector
     FROM chunks c LEFT JOIN chunk_vectors cv ON cv.chunk_id = c.id AND cv.model = ?`,
    [embedder.model],
  );
  const expected = new Map<string, (typeof chunks)[number]>();
  const allChunkIds = new Set<string>();
  /** current documents of the collection with chunks marked failed: repair tries those chunks again */
  const withFailedChunks = new Set<number>();
  for (const chunk of chunks) {
    const id = chunkPointId(Number(chunk.document_id), Number(chunk.chunk_index));
    allChunkIds.add(id);
    if (!current.has(Number(chunk.document_id)) || !own(Number(chunk.document_id))) continue;
    if (chunk.status === 'failed') {
      report.counts.failedChunks++;
      withFailedChunks.add(Number(chunk.document_id));
      continue;
    }
    expected.set(id, chunk);
  }
  const present = new Set(points.map((p) => p.id));
  const wrongSize =
    info.exists && index instanceof SqlVectorIndex
      ? await index.wrongSizePoints(collection, embedder.dimensions)
      : [];

  const missing = [...expected.entries()].filter(([id]) => !present.has(id));
  const kept = points.filter((p) => inFlight.has(p.documentId)).length;
  const orphans = points.filter((p) => !known.has(p.documentId) || !allChunkIds.has(p.id));
  const stale = points.filter(
    (p) =>
      known.has(p.documentId) &&
      allChunkIds.has(p.id) &&
      !current.has(p.documentId) &&
      !inFlight.has(p.documentId),
  );
  // another pipeline's documents: not missing here, and their points here are not this collection's
  const foreign = points.filter(
    (p) => current.has(p.documentId) && allChunkIds.has(p.id) && !own(p.documentId),
  );
  const outdated = points.filter((p) => {
    const chunk = expected.get(p.id);
    return chunk !== undefined && p.chunkId !== undefined && p.chunkId !== Number(chunk.id);
  });
  const outdatedIds = new Set(outdated.map((p) => p.id));
  const wrongRefs = [...expected.entries()].filter(
    ([id, c]) => present.has(id) && !outdatedIds.has(id) && c.qdrant_id !== id,
  );
  const c = report.counts;
  c.expected = expected.size;
  c.points = points.length;
  c.missing = missing.length;
  c.unembedded = missing.filter(
    ([, chunk]) => chunk.has_vector === null || chunk.has_vector === undefined,
  ).length;
  c.orphans = orphans.length;
  c.stale = stale.length;
  c.outdated = outdated.length;
  c.inFlight = kept;
  c.foreign = foreign.length;
  c.wrongSize = wrongSize.length;
  c.wrongChunkRefs = wrongRefs.length;

  const sample = (ids: string[]) => ids.slice(0, EXAMPLES).join(', ') + (ids.length > EXAMPLES ? ', …' : '');
  if (!info.exists && expected.size > 0) report.problems.push(`collection '${collection}' does not exist`);
  if (missing.length > 0) {
    report.problems.push(
      `${missing.length} chunks of current documents have no point (${c.unembedded} of them not embedded yet); ` +
        `e.g. chunk ids ${sample(missing.map(([, chunk]) => String(chunk.id)))}`,
    );
  }
  if (orphans.length > 0) {
    report.problems.push(
      `${orphans.length} points belong to no chunk in SQL; e.g. ${sample(orphans.map((p) => p.id))}`,
    );
  }
  if (stale.length > 0) {
    report.problems.push(
      `${stale.length} points belong to superseded or deleted document versions; e.g. documents ${sample([...new Set(stale.map((p) => String(p.documentId)))])}`,
    );
  }
  if (foreign.length > 0) {
    report.problems.push(
      `${foreign.length} points belong to documents whose pipelines store them in another collection; e.g. documents ${sample([...new Set(foreign.map((p) => String(p.documentId)))])}`,
    );
  }
  if (outdated.length > 0) {
    report.problems.push(
      `${outdated.length} points hold the vector of a chunk replaced since (re-chunked, not embedded again); e.g. documents ${sample([...new Set(outdated.map((p) => String(p.documentId)))])}`,
    );
  }
  if (wrongSize.length > 0) {
    report.problems.push(
      `${wrongSize.length} points have vectors of the wrong size; e.g. ${sample(wrongSize)}`,
    );
  }
  if (wrongRefs.length > 0) {
    report.problems.push(`${wrongRefs.length} chunks do not name their point in chunks.qdrant_id`);
  }
  const entities = checkEntities
    ? await entityDisagreements(services, index)
    : { unpointed: [], orphans: [], mismatch: undefined };
  const { unpointed } = entities;
  c.entitiesWithoutPoint = unpointed.length;
  c.entityOrphans = entities.orphans.length;
  if (entities.mismatch) {
    report.entityMismatch = entities.mismatch;
    report.problems.push(entities.mismatch);
  }
  if (unpointed.length > 0) {
    const gone = unpointed.filter((e) => e.qdrant_id !== null).length;
    const why = [
      gone < unpointed.length ? `${unpointed.length - gone} whose embedding failed` : undefined,
      gone > 0 ? `${gone} whose points are gone from the index` : undefined,
    ]
      .filter(Boolean)
      .join(', ');
    report.problems.push(
      `${unpointed.length} entities have no point in '${ENTITY_COLLECTION}' (${why}); e.g. ${sample(unpointed.map((e) => e.name))}`,
    );
  }
  if (entities.orphans.length > 0) {
    report.problems.push(
      `${entities.orphans.length} points in '${ENTITY_COLLECTION}' belong to no entity in SQL; e.g. ${sample(entities.orphans)}`,
    );
  }
  report.ok = report.problems.length === 0;
  // chunks marked failed are no disagreement, but repair tries them again: the embedder may take them now
  if (!options.repair || (report.ok && withFailedChunks.size === 0)) return report;

  // repair: remove what should not be there, then restore documents that lack points
  const doomed = [
    ...new Set([
      ...orphans.map((p) => p.id),
      ...stale.map((p) => p.id),
      ...foreign.map((p) => p.id),
      ...outdatedIds,
      ...wrongSize,
    ]),
  ];
  await index.deletePoints(collection, doomed);
  await index.deletePoints(ENTITY_COLLECTION, entities.orphans);
  const toRestore = new Set<number>([
    ...missing.map(([, chunk]) => Number(chunk.document_id)),
    ...outdated.map((p) => p.documentId),
    ...wrongRefs.map(([, chunk]) => Number(chunk.document_id)),
  ]);
  for (const id of wrongSize) {
    const chunk = expected.get(id);
    if (chunk) toRestore.add(Number(chunk.document_id));
  }
  // A collection cpe had made and finds missing is made again with a warning that asks for this repair: here it is
  // made again for the repair, which restores its points, and that is worth a line, not the warning.
  const remade = {
    log: {
      warn: (_message: string, context?: Record<string, unknown>) =>
        options.log?.info('collection was missing: made again, its points are restored from SQL', context),
    },
  };
  const toStore = new Set([...toRestore, ...withFailedChunks]);
  if (toStore.size > 0) {
    await index.ensureCollection(
      collection,
      { size: embedder.dimensions, distance: 'Cosine', model: embedder.model },
      remade,
    );
  }
  // Into a collection built with another model no entity point goes: the mismatch says how to rebuild it, and the
  // repair after that stores every entity's point.
  const entitiesToStore = entities.mismatch ? [] : unpointed;
  if (entitiesToStore.length > 0) {
    // the embedder storeEntityPoints embeds entities with: the configured default, not the pipeline's
    const entityEmbedder = await services.providers.embedder();
    await index.ensureCollection(
      ENTITY_COLLECTION,
      { size: entityEmbedder.dimensions, distance: 'Cosine', model: entityEmbedder.model },
      remade,
    );
  }
  const embedOptions = {
    maxEmbedChars: options.maxEmbedChars ?? DEFAULT_MAX_EMBED_CHARS,
    signal: options.signal,
    log: options.log,
  };
  let chunksEmbedded = 0;
  let failedChunksEmbedded = 0;
  for (const documentId of toStore) {
    options.signal?.throwIfAborted();
    const docChunks = (
      await db.query<{ id: number; content: string; status: string; embedding_model: string | null }>(
        'SELECT id, content, status, embedding_model FROM chunks WHERE document_id = ? ORDER BY chunk_index',
        [documentId],
      )
    ).map((row): ChunkRow => ({ ...row, id: Number(row.id) }));
    const failed = docChunks.filter((chunk) => chunk.status === 'failed');
    const rest = docChunks.filter((chunk) => chunk.status !== 'failed');
    if (toRestore.has(documentId)) {
      const embedded = await embedChunks(db, embedder, rest, embedOptions);
      chunksEmbedded += embedded.embedded + embedded.cached;
    }
    if (failed.length > 0) {
      // Chunks marked failed are embedded again: before cpe told a server's outage (Ollama answering 500 for a
      // while) from a bad input, an outage left chunks marked failed for good. A chunk the embedder rejects again
      // stays failed; the others get their points below.
      try {
        const again = await embedChunks(db, embedder, failed, embedOptions);
        const taken = failed.length - again.failed.length;
        failedChunksEmbedded += taken;
        chunksEmbedded += taken;
      } catch (error) {
        options.signal?.throwIfAborted();
        options.log?.warn(`chunks marked failed not embedded again: ${describeError(error, 300)}`, {
          documentId,
          chunks: failed.length,
        });
      }
    }
    await storeDocumentPoints({ ...services, log: options.log }, documentId, {
      collection,
      model: embedder.model,
    });
  }
  const entitiesStored = await storeEntityPoints({ ...services, signal: options.signal }, entitiesToStore);
  report.repaired = {
    pointsDeleted: doomed.length + entities.orphans.length,
    documentsRestored: toRestore.size,
    chunksEmbedded,
    entitiesStored,
    entityPointsDeleted: entities.orphans.length,
    failedChunksEmbedded,
  };
  report.after = await verifyIndex(services, { ...options, repair: false });
  report.ok = report.after.ok;
  return report;
}

/**
 * How the `entities` collection and the entities in SQL disagree. Entities that should have a point and do not:
 * entity embedding is on when the collection exists or an entity names a point in it (entities.qdrant_id; the
 * collection may have been dropped behind cpe's back); an entity lacks its point when it names none (its embedding
 * failed) or the one it names is not in the collection. Orphans: points no entity names and none would store
 * (entityPointId of its type and normalized name: an entity whose point is stored but not yet named in SQL still
 * has it), left by a retraction whose deletion of them failed.
 *
 * The collection is listed before the entities are read, as verifyIndex lists chunk points: an entity's row is
 * committed before its point is stored, so an entity_extract going on cannot make its new points orphans.
 *
 * A collection built with another model or size than the configured embedder's (entity points are embedded with it,
 * see storeEntityPoints) is a mismatch: entity_extract stores no point in it, only warns.
 */
async function entityDisagreements(
  services: RetrievalServices,
  index: Awaited<ReturnType<RetrievalServices['providers']['vectors']>>,
): Promise<{
  unpointed: Array<EntityRow & { qdrant_id: string | null }>;
  orphans: string[];
  mismatch?: string;
}> {
  const info = await index.describeCollection(ENTITY_COLLECTION);
  const { exists } = info;
  let mismatch: string | undefined;
  if (exists) {
    const embedder = await services.providers.embedder();
    if (
      (info.model !== undefined && info.model !== embedder.model) ||
      info.dimensions !== embedder.dimensions
    ) {
      mismatch = collectionMismatch(
        index.kind,
        ENTITY_COLLECTION,
        { ...info, location: index.location },
        { model: embedder.model, size: embedder.dimensions, distance: 'Cosine' },
      ).message;
    }
  }
  const points = exists ? (await index.listPoints(ENTITY_COLLECTION)).map((p) => p.id) : [];
  const entities = await services.db.query<EntityRow & { qdrant_id: string | null }>(
    'SELECT id, name, normalized_name, type, description, qdrant_id FROM entities',
  );
  if (!exists && entities.every((e) => e.qdrant_id === null)) return { unpointed: [], orphans: [] };
  const present = new Set(points);
  const owned = new Set(
    entities.flatMap((e) => [
      entityPointId(e.normalized_name, e.type),
      ...(e.qdrant_id === null ? [] : [String(e.qdrant_id)]),
    ]),
  );
  return {
    unpointed: entities.filter((e) => e.qdrant_id === null || !present.has(String(e.qdrant_id))),
    orphans: points.filter((id) => !owned.has(id)),
    mismatch,
  };
}

/**
 * Which documents are the collection's: the ones a pipeline that processed them (a step checkpoint of it, as
 * `cpe reprocess` finds "the pipeline that processed the document") stores its points into this collection, as its
 * embed or vector_store step is configured. A document no pipeline claims that way (processed before checkpoints,
 * by a pipeline since removed, imported with its points) is the collection's when the collection holds points of
 * it: the index is the only word on it then, and its lost points are still found.
 *
 * Not the points alone: a document all of whose points are gone would be no collection's, and points put where
 * they do not belong would make it theirs. Not chunks.qdrant_id or embedding_model: a point id is derived from the
 * document and chunk index, and one model serves many collections, so neither names a collection.
 */
async function collectionDocuments(
  db: RetrievalServices['db'],
  collection: string,
  points: ReadonlyArray<{ documentId: number }>,
): Promise<(documentId: number) => boolean> {
  const stores = await pointCollectionsByPipeline(db);
  const processedBy = await db.query<{ document_id: number; pipeline_id: number }>(
    'SELECT DISTINCT document_id, pipeline_id FROM step_checkpoints',
  );
  const claimed = new Map<number, boolean>();
  for (const row of processedBy) {
    const into = stores.get(Number(row.pipeline_id));
    if (!into) continue;
    const id = Number(row.document_id);
    claimed.set(id, claimed.get(id) === true || into.has(collection));
  }
  const withPoints = new Set(points.map((p) => p.documentId));
  return (documentId) => claimed.get(documentId) ?? withPoints.has(documentId);
}
