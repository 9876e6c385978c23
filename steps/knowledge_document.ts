import { defineLlmStep, type StepWorkResult } from '../src/knowledge/define-step.js';
import { promptOverhead } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  KNOWLEDGE_PROMPT_KEYS,
  type KnowledgeConfig,
  knowledgeConfigProperties,
  runKnowledgeLevel,
} from '../src/knowledge/statements.js';

/** Key statements of the whole document, with provenance down to the chunks. */
export default defineLlmStep<LlmStepConfig & KnowledgeConfig>({
  type: 'knowledge_document',
  reads: ['chunks'],
  writes: ['knowledge'],
  description:
    'key statements of the whole document (from section or page statements when present), with provenance',
  promptName: 'knowledge',
  promptKeys: KNOWLEDGE_PROMPT_KEYS,
  requiredKeys: ['sources'],
  properties: knowledgeConfigProperties(10),
  async work(ctx, asker): Promise<StepWorkResult> {
    const r = await runKnowledgeLevel(ctx, asker, ctx.config, 'document');
    return {
      counts: { itemsIn: r.units, itemsOut: r.statements },
      skipReason: r.units === 0 ? r.reason : undefined,
    };
  },
  estimate: (input) => {
    if (input.chunks.length === 0) return { calls: 0, tokensIn: 0, tokensOut: 0 };
    const text = Math.min(
      input.chunks.reduce((n, c) => n + c.tokenCount, 0),
      Number(input.config.max_input_tokens ?? 6000),
    );
    return { calls: 1, tokensIn: promptOverhead('knowledge', input.config) + text, tokensOut: 500 };
  },
});
