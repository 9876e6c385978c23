import { defineLlmStep } from '../src/knowledge/define-step.js';
import {
  ENTITY_PROMPT_KEYS,
  type EntityConfig,
  entityConfigProperties,
  runEntityExtraction,
} from '../src/knowledge/entities.js';
import { perChunkEstimate } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';

/** Entities per chunk (name, type, description), normalised and merged across documents. */
export default defineLlmStep<LlmStepConfig & EntityConfig>({
  type: 'entity_extract',
  reads: ['chunks'],
  writes: ['entities'],
  description: 'entities per chunk (name, type, description), normalised and merged across documents',
  promptName: 'entity_extract',
  promptKeys: ENTITY_PROMPT_KEYS,
  requiredKeys: ['text'],
  properties: entityConfigProperties,
  async work(ctx, asker) {
    const r = await runEntityExtraction(ctx, asker, ctx.config);
    return {
      counts: {
        itemsIn: r.chunks,
        itemsOut: r.mentions,
        entities: r.entities,
        entitiesCreated: r.created,
        entitiesEmbedded: r.embedded,
        entitiesMerged: r.merged,
      },
    };
  },
  estimate: (input) => perChunkEstimate(input, 'entity_extract', 250),
});
