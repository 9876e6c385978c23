import { comparedName } from '../db/collation.js';
import { insertOrExistingId } from '../db/insert-or-existing.js';
import type { SqlExecutor } from '../db/sql.js';
import { inLists } from '../db/statement-shapes.js';
import { describeError, ErrorCodes, isCpeError } from '../errors.js';
import { fillPrompt } from '../llm/prompts.js';
import { pointIdFromKey } from '../vectors/point-id.js';
import { documentTitle, headingLabel, loadChunks } from './chunks.js';
import { keepItems } from './keep-items.js';
import { type Asker, ask, forEachItem, type KnowledgeContext } from './llm-step.js';
import { cleanEntityName, normalizeEntityName, normalizeEntityType } from './normalize.js';
import {
  ENTITY_COLLECTION,
  entityLockKey,
  inLockOrder,
  lockEntity,
  lockingRead,
  mentionedEntities,
  settleEntities,
} from './retract.js';

export interface EntityConfig {
  entity_types: string[];
  max_entities_per_chunk: number;
  /** embed names and descriptions into the `entities` collection */
  embed_entities: boolean;
  /** > 0: a new entity whose vector is at least this similar to an existing one of the same type is merged into it */
  merge_similarity: number;
}

export const DEFAULT_ENTITY_TYPES = [
  'PERSON',
  'ORGANISATION',
  'ROLE',
  'LOCATION',
  'LAW',
  'DOCUMENT',
  'CONCEPT',
  'METHOD',
  'TOOL',
  'PRODUCT',
  'EVENT',
  'DATE',
];

export const entityConfigProperties = {
  entity_types: {
    type: 'array',
    items: { type: 'string', pattern: '^[A-Z][A-Z0-9_]*$' },
    minItems: 1,
    uniqueItems: true,
    default: DEFAULT_ENTITY_TYPES,
    description: 'allowed entity types (upper case)',
  },
  max_entities_per_chunk: { type: 'integer', minimum: 1, maximum: 100, default: 15 },
  embed_entities: {
    type: 'boolean',
    default: true,
    description: 'embed entities into the entities collection',
  },
  merge_similarity: {
    type: 'number',
    minimum: 0,
    maximum: 1,
    default: 0,
    description:
      '0 = off; else cosine similarity at which a new entity is merged into an existing one of its type',
  },
} as const;

export const ENTITY_PROMPT_KEYS = ['title', 'heading', 'types', 'max_entities', 'text'] as const;

export function entitySchema(types: readonly string[], maxItems: number) {
  return {
    type: 'object',
    properties: {
      entities: {
        type: 'array',
        maxItems,
        items: {
          type: 'object',
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 300 },
            type: { type: 'string', enum: [...types] },
            description: { type: 'string', maxLength: 1000 },
          },
          required: ['name', 'type', 'description'],
          additionalProperties: false,
        },
      },
    },
    required: ['entities'],
    additionalProperties: false,
  };
}

interface EntityAnswer {
  entities: Array<{ name: string; type: string; description: string }>;
}

export interface ExtractedMention {
  chunkId: number;
  name: string;
  normalized: string;
  type: string;
  description: string;
}

/** The point id of an entity in the `entities` collection: a UUID from its merge key, stable across reruns. */
export const entityPointId = (normalizedName: string, type: string): string =>
  pointIdFromKey(`entity:${type}:${normalizedName}`);

/** Asks the model for the entities of every chunk of the document. */
export async function extractEntityMentions(
  ctx: KnowledgeContext,
  asker: Asker,
  config: EntityConfig,
): Promise<{ mentions: ExtractedMention[]; chunks: number }> {
  const chunks = await loadChunks(ctx.db, ctx.document.id);
  const title = await documentTitle(ctx.db, ctx.document.id);
  const schema = entitySchema(config.entity_types, config.max_entities_per_chunk);
  const answers = await forEachItem(
    ctx,
    asker,
    chunks,
    (c) => ({ chunkId: c.id, chunkIndex: c.chunkIndex }),
    (chunk) =>
      ask<EntityAnswer>(asker, {
        prompt: fillPrompt(asker.template, {
          title,
          heading: headingLabel(chunk.headingPath),
          types: config.entity_types.join(', '),
          max_entities: config.max_entities_per_chunk,
          text: chunk.content,
        }),
        schema,
        schemaName: 'entities',
        // an entity over a limit is dropped below, not the chunk's whole answer
        limits: 'caller',
        signal: ctx.signal,
      }),
  );
  const mentions: ExtractedMention[] = [];
  answers.forEach((answer, i) => {
    const chunk = chunks[i]!;
    const entities = keepItems(
      ctx.log,
      { chunkId: chunk.id, chunkIndex: chunk.chunkIndex },
      { name: 'entities', schema: schema.properties.entities },
      answer?.entities ?? [],
      (entity) => ({ ...entity, name: cleanEntityName(entity.name), description: entity.description.trim() }),
    );
    const seen = new Set<string>();
    for (const entity of entities) {
      const type = normalizeEntityType(entity.type);
      const normalized = normalizeEntityName(entity.name, type);
      if (!normalized || seen.has(`${type}|${normalized}`)) continue;
      seen.add(`${type}|${normalized}`);
      mentions.push({
        chunkId: chunk.id,
        name: entity.name,
        normalized,
        type,
        description: entity.description,
      });
    }
  });
  return { mentions, chunks: chunks.length };
}

/**
 * Replaces the document's mentions atomically: every entity is found or created by (normalised name, type) —
 * that is the merge across documents —, its old mentions go, and the entities it mentioned before settle
 * (settleEntities): deleted when nobody mentions them any more, else named and described by the mentions that
 * remain. Every entity involved is locked first, in lock order (see inLockOrder). Returns the ids of the
 * document's entities, the points to delete, and the entities whose name or description changed (to be embedded
 * again).
 */
export async function writeEntityMentions(
  db: SqlExecutor,
  documentId: number,
  mentions: readonly ExtractedMention[],
): Promise<{ entityIds: number[]; created: number; deletedPointIds: string[]; changedIds: number[] }> {
  return db.transaction(async (tx) => {
    // names as the database's unique key compares them (MariaDB: "Müller" and "Muller" are one entity there)
    const compared = comparedName(tx);
    const keyOf = (type: string, normalized: string) => `${type}|${compared(normalized)}`;
    const before = await mentionedEntities(tx, documentId);
    /** the first mention of each entity: a new entity gets its name and description */
    const firsts = new Map<string, ExtractedMention>();
    for (const mention of mentions) {
      const key = keyOf(mention.type, mention.normalized);
      if (!firsts.has(key)) firsts.set(key, mention);
    }
    const locks = [
      ...[...firsts.values()].map((mention) => ({ ...mention, id: undefined })),
      ...before.filter((entity) => !firsts.has(keyOf(entity.type, entity.normalized))),
    ];
    const ids = new Map<string, number>();
    let created = 0;
    for (const entity of inLockOrder(locks, entityLockKey(tx))) {
      if (entity.id !== undefined) {
        await lockEntity(tx, entity.id);
        continue;
      }
      const found = await findOrCreateEntity(tx, firsts.get(keyOf(entity.type, entity.normalized))!);
      ids.set(keyOf(entity.type, entity.normalized), found.id);
      if (found.created) created++;
    }
    await tx.run('DELETE FROM entity_mentions WHERE document_id = ?', [documentId]);
    /** one mention of an entity per chunk: two spellings of it there are one mention */
    const mentioned = new Set<string>();
    for (const mention of mentions) {
      const id = ids.get(keyOf(mention.type, mention.normalized))!;
      if (mentioned.has(`${id}|${mention.chunkId}`)) continue;
      mentioned.add(`${id}|${mention.chunkId}`);
      await tx.run(
        `INSERT INTO entity_mentions (entity_id, document_id, chunk_id, mention_text, description)
         VALUES (?, ?, ?, ?, ?)`,
        [id, documentId, mention.chunkId, mention.name, mention.description],
      );
    }
    const settled = await settleEntities(
      tx,
      before.map((entity) => entity.id),
    );
    return {
      entityIds: [...new Set(ids.values())],
      created,
      deletedPointIds: settled.pointIds,
      changedIds: settled.changedIds,
    };
  });
}

/**
 * The entity of a mention, locked (another document's settleEntities waits for this document's mentions), or
 * created with the mention's name and description. The first description stays; a later one only fills a gap.
 */
async function findOrCreateEntity(
  tx: SqlExecutor,
  mention: ExtractedMention,
): Promise<{ id: number; created: boolean }> {
  const rows = await tx.query<{ id: number; description: string | null }>(
    `SELECT id, description FROM entities WHERE normalized_name = ? AND type = ?${lockingRead(tx)}`,
    [mention.normalized, mention.type],
  );
  if (rows[0]) {
    const id = Number(rows[0].id);
    if (!rows[0].description && mention.description) {
      await tx.run('UPDATE entities SET description = ? WHERE id = ?', [mention.description, id]);
    }
    return { id, created: false };
  }
  const id = await insertOrExistingId(
    tx,
    'INSERT INTO entities (name, normalized_name, type, description) VALUES (?, ?, ?, ?)',
    [mention.name, mention.normalized, mention.type, mention.description || null],
    'description = COALESCE(description, VALUES(description))',
  );
  return { id, created: true };
}

/**
 * Embeds the document's entities that have no point yet into the `entities` collection (name, type and
 * description), and — when merge_similarity > 0 — merges a new entity into an existing one of the same type
 * whose vector is that similar. Best effort: the entities are already safe in SQL, so a failing embedder or
 * index is a warning, not a failed step.
 */
export async function embedEntities(
  ctx: KnowledgeContext,
  entityIds: readonly number[],
  deletedPointIds: readonly string[],
  config: EntityConfig,
): Promise<{ embedded: number; merged: number }> {
  if (entityIds.length === 0 && deletedPointIds.length === 0) return { embedded: 0, merged: 0 };
  try {
    const vectors = await ctx.providers.vectors();
    // the points of deleted entities go in any case: embed_entities off now does not leave those of an earlier run
    if (deletedPointIds.length > 0)
      await vectors.deletePoints(ENTITY_COLLECTION, deletedPointIds).catch(() => undefined);
    if (!config.embed_entities || entityIds.length === 0) return { embedded: 0, merged: 0 };
    const rows: EntityRow[] = [];
    for (const list of inLists(entityIds)) {
      rows.push(
        ...(await ctx.db.query<(typeof rows)[number]>(
          `SELECT id, name, normalized_name, type, description FROM entities
            WHERE qdrant_id IS NULL AND id IN (${list.marks})`,
          list.values,
        )),
      );
    }
    if (rows.length === 0) return { embedded: 0, merged: 0 };
    const embedder = await ctx.providers.embedder();
    const embeddings = await embedder.embed(rows.map(entityText), ctx.signal);
    await ensureEntityCollection(vectors, embedder);

    let merged = 0;
    const keep: typeof rows = [];
    const keepVectors: Float32Array[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      if (config.merge_similarity > 0) {
        const hits = await vectors.search(ENTITY_COLLECTION, embeddings[i]!, { limit: 5 });
        const target = hits.find(
          (h) =>
            h.score >= config.merge_similarity &&
            h.payload.type === row.type &&
            Number(h.payload.entity_id) !== Number(row.id),
        );
        if (target && (await mergeEntityInto(ctx.db, Number(row.id), Number(target.payload.entity_id)))) {
          ctx.log.info('merged similar entity', {
            from: row.name,
            into: target.payload.name,
            score: target.score,
          });
          merged++;
          continue;
        }
      }
      keep.push(row);
      keepVectors.push(embeddings[i]!);
    }
    const embedded = await storeEntityPoints(ctx, keep, keepVectors);
    return { embedded, merged };
  } catch (error) {
    // the refusal of an `entities` collection built with another model says how to rebuild it: cut, it would not
    const advice = isCpeError(error) && error.code === ErrorCodes.COLLECTION_MISMATCH;
    ctx.log.warn(
      `entities not embedded (they are stored in SQL): ${describeError(error, advice ? 2000 : 500)}`,
      {
        entities: entityIds.length,
      },
    );
    return { embedded: 0, merged: 0 };
  }
}

/** The `entities` collection, made for the embedder's vectors when missing. */
const ensureEntityCollection = (
  index: Awaited<ReturnType<KnowledgeContext['providers']['vectors']>>,
  embedder: { dimensions: number; model: string },
) =>
  index.ensureCollection(ENTITY_COLLECTION, {
    size: embedder.dimensions,
    distance: 'Cosine',
    model: embedder.model,
  });

/** An entity row as its point is made from it. */
export interface EntityRow {
  id: number;
  name: string;
  normalized_name: string;
  type: string;
  description: string | null;
}

/** What an entity's vector is made of: name, type and description. */
const entityText = (r: EntityRow) => `${r.name} (${r.type})${r.description ? `: ${r.description}` : ''}`;

/**
 * Stores the points of entities in the `entities` collection and names each in entities.qdrant_id. Vectors not
 * given are embedded here (and the collection made when missing): `cpe verify --repair` restores the points of
 * entities whose embedding failed when they were extracted.
 */
export async function storeEntityPoints(
  services: {
    db: KnowledgeContext['db'];
    providers: Pick<KnowledgeContext['providers'], 'vectors' | 'embedder'>;
    signal?: AbortSignal;
  },
  rows: readonly EntityRow[],
  vectors?: readonly Float32Array[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const index = await services.providers.vectors();
  let given = vectors;
  if (!given) {
    const embedder = await services.providers.embedder();
    given = await embedder.embed(rows.map(entityText), services.signal);
    await ensureEntityCollection(index, embedder);
  }
  const points = rows.map((row, i) => ({
    id: entityPointId(row.normalized_name, row.type),
    vector: given[i]!,
    // an entity belongs to no single document (it is shared); the index wants an integer document_id, and 0
    // is no document's id, so deleteByDocument of a real document never touches entity points
    payload: {
      document_id: 0,
      entity_id: Number(row.id),
      name: row.name,
      type: row.type,
      description: row.description ?? '',
    },
  }));
  await index.upsert(ENTITY_COLLECTION, points);
  for (const [i, row] of rows.entries()) {
    await services.db.run('UPDATE entities SET qdrant_id = ? WHERE id = ?', [points[i]!.id, row.id]);
  }
  return points.length;
}

/**
 * Stores the points of entities again whose name or description changed when a document version was retracted
 * (settleEntities cleared their qdrant_id; their old points are deleted by then). Best effort: an entity left
 * without a point is embedded by the next entity_extract of a document that mentions it, or by
 * `cpe verify --repair`.
 */
export async function embedEntitiesAgain(
  services: Parameters<typeof storeEntityPoints>[0],
  ids: readonly number[],
): Promise<number> {
  if (ids.length === 0) return 0;
  try {
    const rows: EntityRow[] = [];
    for (const list of inLists(ids)) {
      rows.push(
        ...(await services.db.query<EntityRow>(
          `SELECT id, name, normalized_name, type, description FROM entities
            WHERE qdrant_id IS NULL AND id IN (${list.marks})`,
          list.values,
        )),
      );
    }
    return await storeEntityPoints(services, rows);
  } catch {
    return 0;
  }
}

/** Moves all mentions and relations of one entity to another and deletes it. False when either is gone. */
export async function mergeEntityInto(db: SqlExecutor, fromId: number, intoId: number): Promise<boolean> {
  return db.transaction(async (tx) => {
    const both = await tx.query<{ id: number }>('SELECT id FROM entities WHERE id IN (?, ?)', [
      fromId,
      intoId,
    ]);
    if (both.length !== 2) return false;
    // a chunk that mentions both keeps one mention (of the entity merged into)
    const twice = await tx.query<{ id: number }>(
      `SELECT f.id FROM entity_mentions f
         JOIN entity_mentions i ON i.chunk_id = f.chunk_id AND i.entity_id = ?
        WHERE f.entity_id = ?`,
      [intoId, fromId],
    );
    for (const list of inLists(twice.map((row) => Number(row.id))))
      await tx.run(`DELETE FROM entity_mentions WHERE id IN (${list.marks})`, list.values);
    await tx.run('UPDATE entity_mentions SET entity_id = ? WHERE entity_id = ?', [intoId, fromId]);
    await tx.run('UPDATE entity_relations SET source_entity_id = ? WHERE source_entity_id = ?', [
      intoId,
      fromId,
    ]);
    await tx.run('UPDATE entity_relations SET target_entity_id = ? WHERE target_entity_id = ?', [
      intoId,
      fromId,
    ]);
    await tx.run(
      'DELETE FROM entity_relations WHERE source_entity_id = target_entity_id AND source_entity_id = ?',
      [intoId],
    );
    await tx.run('DELETE FROM entities WHERE id = ?', [fromId]);
    return true;
  });
}

/** entity_extract's whole work for one document (also used by analyze). */
export async function runEntityExtraction(ctx: KnowledgeContext, asker: Asker, config: EntityConfig) {
  const { mentions, chunks } = await extractEntityMentions(ctx, asker, config);
  const written = await writeEntityMentions(ctx.db, ctx.document.id, mentions);
  // entities renamed or described anew (their old point is deleted) are embedded again with the document's own
  const embedding = await embedEntities(
    ctx,
    [...new Set([...written.entityIds, ...written.changedIds])],
    written.deletedPointIds,
    config,
  );
  return {
    chunks,
    mentions: mentions.length,
    entities: written.entityIds.length,
    created: written.created,
    ...embedding,
  };
}
