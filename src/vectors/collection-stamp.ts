import type { SqlExecutor } from '../db/sql.js';
import { CpeError, ErrorCodes } from '../errors.js';
import { ENTITY_COLLECTION } from '../knowledge/retract.js';
import type { CollectionSpec } from './types.js';

export interface CollectionStamp {
  backend: 'embedded' | 'qdrant';
  name: string;
  location: string;
  model: string;
  dimensions: number;
  distance: string;
  revision: number;
}

export async function readStamp(
  db: SqlExecutor,
  backend: CollectionStamp['backend'],
  name: string,
): Promise<CollectionStamp | undefined> {
  const [row] = await db.query<any>(
    'SELECT backend, name, location, model, dimensions, distance, revision FROM vector_collections WHERE backend = ? AND name = ?',
    [backend, name],
  );
  if (!row) return undefined;
  return { ...row, dimensions: Number(row.dimensions), revision: Number(row.revision) };
}

/**
 * Records (or replaces) the model and size a collection is built with. One upsert statement, so that documents
 * creating the collection at the same moment (one process or several) never collide on its key.
 */
export async function writeStamp(
  db: SqlExecutor,
  backend: CollectionStamp['backend'],
  name: string,
  location: string,
  spec: CollectionSpec,
): Promise<void> {
  const insert =
    'INSERT INTO vector_collections (backend, name, location, model, dimensions, distance, revision) VALUES (?, ?, ?, ?, ?, ?, 0)';
  await db.run(
    db.dialect === 'mysql'
      ? `${insert} ON DUPLICATE KEY UPDATE location = VALUES(location), model = VALUES(model),
         dimensions = VALUES(dimensions), distance = VALUES(distance), revision = 0`
      : `${insert} ON CONFLICT (backend, name) DO UPDATE SET location = excluded.location, model = excluded.model,
         dimensions = excluded.dimensions, distance = excluded.distance, revision = 0`,
    [backend, name, location, spec.model, spec.size, spec.distance],
  );
}

/**
 * Names the Qdrant a stamped collection is in now: one copied to another Qdrant (a snapshot restored there) and found
 * to hold this data set's points. Only the location changes: the model and size it was built with are the same.
 */
export async function moveStamp(
  db: SqlExecutor,
  backend: CollectionStamp['backend'],
  name: string,
  location: string,
): Promise<void> {
  await db.run('UPDATE vector_collections SET location = ? WHERE backend = ? AND name = ?', [
    location,
    backend,
    name,
  ]);
}

export async function deleteStamp(db: SqlExecutor, backend: CollectionStamp['backend'], name: string) {
  await db.run('DELETE FROM vector_collections WHERE backend = ? AND name = ?', [backend, name]);
}

const slug = (model: string) =>
  model
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');

/**
 * The refusal when the configured embedder does not match what a collection was built with, saying how to move
 * on: vectors of two models (or sizes) in one collection would make every similarity score meaningless.
 */
export function collectionMismatch(
  backend: CollectionStamp['backend'],
  name: string,
  built: { model?: string; dimensions?: number; distance?: string; location?: string },
  wanted: CollectionSpec,
): CpeError {
  if (name === ENTITY_COLLECTION) return entityCollectionMismatch(backend, built, wanted);
  const was = `${built.model ?? 'an unknown model'} (${built.dimensions ?? '?'} dimensions${built.distance && built.distance !== wanted.distance ? `, ${built.distance}` : ''})`;
  const now = `${wanted.model} (${wanted.size} dimensions${built.distance && built.distance !== wanted.distance ? `, ${wanted.distance}` : ''})`;
  const suggestion = `${name}_${slug(wanted.model)}`;
  return new CpeError(
    ErrorCodes.COLLECTION_MISMATCH,
    `collection '${name}' (${backend}) was built with ${was}, but the configured embedder is ${now}. ` +
      'Vectors of different models cannot share a collection. To move to the new model, use a new collection: ' +
      `set config.collection to '${suggestion}' on the embed step and on the vector_store step (if the pipeline has ` +
      `one), and in config.collections (a list) of the collection_setup and index_optimize steps put '${suggestion}' ` +
      `in place of '${name}' (collection_setup's default list, ["documents", "mail", "entities"], sets up other ` +
      "collections too: 'mail', built with the old model, needs a new name as well; 'entities' keeps its name, " +
      'cpe says how to rebuild it when it gets there); then run the pipeline ' +
      `again (the old collection stays usable until you drop it). Or configure ${built.model ?? 'the old model'} ` +
      `again to keep using '${name}'.`,
    { details: { collection: name, backend, built, wanted } },
  );
}

/**
 * The refusal for the `entities` collection. Its name is fixed (entity_extract stores and verify checks entity points
 * there, whatever a pipeline's chunk collection is called; no step's config.collection moves them), so the way to
 * the new model is to rebuild it under the same name: delete it, and `cpe verify --repair` makes it again and embeds
 * every entity (entities whose points are gone count as missing, see verify's entityDisagreements).
 */
export function entityCollectionMismatch(
  backend: CollectionStamp['backend'],
  built: { model?: string; dimensions?: number; location?: string },
  wanted: CollectionSpec,
): CpeError {
  const name = ENTITY_COLLECTION;
  const drop =
    backend === 'qdrant'
      ? `delete it in Qdrant: curl -X DELETE ${built.location ?? '"$CPE_QDRANT_URL"'}/collections/${name} (add ` +
        `-H "api-key: $QDRANT_API_KEY" if your Qdrant wants a key);`
      : `delete it from the embedded index, in ki_content: DELETE FROM vector_points WHERE collection = '${name}'; ` +
        `DELETE FROM vector_collections WHERE backend = 'embedded' AND name = '${name}';`;
  return new CpeError(
    ErrorCodes.COLLECTION_MISMATCH,
    `collection '${name}' (${backend}) was built with ${built.model ?? 'an unknown model'} (${built.dimensions ?? '?'} ` +
      `dimensions), but entities are now embedded with ${wanted.model} (${wanted.size} dimensions), the configured ` +
      'embedder (CPE_EMBED_MODEL): vectors of different models cannot share a collection, and new entities get no ' +
      `point in it (they are kept in SQL). The '${name}' collection keeps its name; to rebuild it with the new model, ` +
      `${drop} then run cpe verify --repair, which makes it again and embeds every entity with ${wanted.model}. ` +
      `Or configure ${built.model ?? 'the old model'} again.`,
    { details: { collection: name, backend, built, wanted } },
  );
}

export function checkStamp(
  stamp: Pick<CollectionStamp, 'backend' | 'name' | 'model' | 'dimensions' | 'distance'>,
  spec: CollectionSpec,
): void {
  if (stamp.model !== spec.model || stamp.dimensions !== spec.size || stamp.distance !== spec.distance) {
    throw collectionMismatch(stamp.backend, stamp.name, stamp, spec);
  }
}
