import { comparedName } from '../db/collation.js';
import { fillPrompt } from '../llm/prompts.js';
import { loadChunks } from './chunks.js';
import { keepItems } from './keep-items.js';
import { type Asker, ask, forEachItem, type KnowledgeContext } from './llm-step.js';
import { hasWordCharacter, normalizeEntityName } from './normalize.js';

export interface RelationConfig {
  relation_types: string[];
  max_relations_per_chunk: number;
  /** relations below this confidence are not stored */
  min_confidence: number;
}

export const DEFAULT_RELATION_TYPES = [
  'PART_OF',
  'IS_A',
  'USES',
  'REQUIRES',
  'REGULATES',
  'RESPONSIBLE_FOR',
  'CREATES',
  'DEFINES',
  'LOCATED_IN',
  'MEMBER_OF',
  'RELATED_TO',
];

export const relationConfigProperties = {
  relation_types: {
    type: 'array',
    items: { type: 'string', pattern: '^[A-Z][A-Z0-9_]*$' },
    minItems: 1,
    uniqueItems: true,
    default: DEFAULT_RELATION_TYPES,
    description: 'allowed relation types (upper case)',
  },
  max_relations_per_chunk: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
  min_confidence: { type: 'number', minimum: 0, maximum: 1, default: 0.5 },
} as const;

export const RELATION_PROMPT_KEYS = ['entities', 'relation_types', 'text'] as const;

export function relationSchema(types: readonly string[], maxItems: number) {
  return {
    type: 'object',
    properties: {
      relations: {
        type: 'array',
        maxItems,
        items: {
          type: 'object',
          properties: {
            source: { type: 'string', minLength: 1 },
            target: { type: 'string', minLength: 1 },
            type: { type: 'string', enum: [...types] },
            description: { type: 'string', maxLength: 1000 },
            confidence: { type: 'number', minimum: 0, maximum: 1 },
          },
          required: ['source', 'target', 'type', 'description', 'confidence'],
          additionalProperties: false,
        },
      },
    },
    required: ['relations'],
    additionalProperties: false,
  };
}

interface RelationAnswer {
  relations: Array<{ source: string; target: string; type: string; description: string; confidence: number }>;
}

interface KnownEntity {
  id: number;
  name: string;
  type: string;
  normalized: string;
}

/**
 * Typed relations between the entities entity_extract found, one call per chunk that mentions at least two
 * of them; the chunk is the evidence. Names the model returns are matched to the chunk's entities by their
 * normalised form; a relation naming anything else is dropped (counted). Replaces the document's relations
 * atomically.
 */
export async function runRelationExtraction(ctx: KnowledgeContext, asker: Asker, config: RelationConfig) {
  const chunks = await loadChunks(ctx.db, ctx.document.id);
  const rows = await ctx.db.query<{
    chunk_id: number;
    id: number;
    name: string;
    type: string;
    normalized_name: string;
  }>(
    `SELECT DISTINCT m.chunk_id, e.id, e.name, e.type, e.normalized_name
       FROM entity_mentions m JOIN entities e ON e.id = m.entity_id
      WHERE m.document_id = ? AND m.chunk_id IS NOT NULL
      ORDER BY m.chunk_id, e.normalized_name, e.type, e.id`,
    [ctx.document.id],
  );
  // the prompt lists a chunk's entities by name, not by id: ids depend on which of the documents processed at the
  // same time created an entity first, and the prompt (the cache key of the answer) must not
  const byChunk = new Map<number, KnownEntity[]>();
  for (const r of rows) {
    const list = byChunk.get(Number(r.chunk_id)) ?? [];
    list.push({ id: Number(r.id), name: r.name, type: r.type, normalized: r.normalized_name });
    byChunk.set(Number(r.chunk_id), list);
  }
  const work = chunks.filter((c) => (byChunk.get(c.id)?.length ?? 0) >= 2);
  const schema = relationSchema(config.relation_types, config.max_relations_per_chunk);
  const answers = await forEachItem(
    ctx,
    asker,
    work,
    (c) => ({ chunkId: c.id, chunkIndex: c.chunkIndex }),
    (chunk) =>
      ask<RelationAnswer>(asker, {
        prompt: fillPrompt(asker.template, {
          entities: byChunk
            .get(chunk.id)!
            .map((e) => `- ${e.name} (${e.type})`)
            .join('\n'),
          relation_types: config.relation_types.join(', '),
          text: chunk.content,
        }),
        schema,
        schemaName: 'relations',
        // a relation over a limit is dropped below, not the chunk's whole answer
        limits: 'caller',
        signal: ctx.signal,
      }),
  );

  const relations: Array<{
    source: number;
    target: number;
    type: string;
    description: string;
    confidence: number;
    chunkId: number;
  }> = [];
  let unmatched = 0;
  let belowConfidence = 0;
  const compared = comparedName(ctx.db);
  answers.forEach((answer, i) => {
    const chunk = work[i]!;
    const known = byChunk.get(chunk.id)!;
    const find = (name: string) => {
      // no entity is named by punctuation alone (normalizeEntityName), not even one stored before that was so
      if (!hasWordCharacter(name)) return undefined;
      const exact = known.find((e) => e.name === name);
      if (exact) return exact;
      // as the database compares names: on MariaDB "Muller" is the entity stored as "müller"
      return known.find((e) => compared(e.normalized) === compared(normalizeEntityName(name, e.type)));
    };
    const kept = keepItems(
      ctx.log,
      { chunkId: chunk.id, chunkIndex: chunk.chunkIndex },
      { name: 'relations', schema: schema.properties.relations },
      answer?.relations ?? [],
      (r) => ({ ...r, source: r.source.trim(), target: r.target.trim(), description: r.description.trim() }),
    );
    const seen = new Set<string>();
    for (const r of kept) {
      const source = find(r.source);
      const target = find(r.target);
      if (!source || !target || source.id === target.id) {
        unmatched++;
        continue;
      }
      if (r.confidence < config.min_confidence) {
        belowConfidence++;
        continue;
      }
      const key = `${source.id}|${target.id}|${r.type}`;
      if (seen.has(key)) continue;
      seen.add(key);
      relations.push({
        source: source.id,
        target: target.id,
        type: r.type,
        description: r.description,
        confidence: r.confidence,
        chunkId: chunk.id,
      });
    }
  });
  if (unmatched > 0) ctx.log.info(`${unmatched} relations named unknown entities and were dropped`);

  await ctx.db.transaction(async (tx) => {
    await tx.run('DELETE FROM entity_relations WHERE document_id = ?', [ctx.document.id]);
    for (const r of relations) {
      await tx.run(
        `INSERT INTO entity_relations (source_entity_id, target_entity_id, relation_type, description, document_id, chunk_id, confidence)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [r.source, r.target, r.type, r.description || null, ctx.document.id, r.chunkId, r.confidence],
      );
    }
  });
  return { chunks: work.length, relations: relations.length, unmatched, belowConfidence };
}
