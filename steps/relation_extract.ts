import { defineLlmStep } from '../src/knowledge/define-step.js';
import { perChunkEstimate } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  RELATION_PROMPT_KEYS,
  type RelationConfig,
  relationConfigProperties,
  runRelationExtraction,
} from '../src/knowledge/relations.js';

/** Typed relations between the document's entities, each with its evidence chunk. */
export default defineLlmStep<LlmStepConfig & RelationConfig>({
  type: 'relation_extract',
  reads: ['chunks', 'entities'],
  description: 'typed relations between known entities, each with the chunk as evidence',
  promptName: 'relation_extract',
  promptKeys: RELATION_PROMPT_KEYS,
  requiredKeys: ['text', 'entities'],
  properties: relationConfigProperties,
  async work(ctx, asker) {
    const r = await runRelationExtraction(ctx, asker, ctx.config);
    return {
      counts: {
        itemsIn: r.chunks,
        itemsOut: r.relations,
        relationsUnmatched: r.unmatched,
        relationsBelowConfidence: r.belowConfidence,
      },
    };
  },
  // chunks with two or more entities are not known before entity_extract ran: estimate every chunk
  estimate: (input) => perChunkEstimate(input, 'relation_extract', 250, 60),
});
