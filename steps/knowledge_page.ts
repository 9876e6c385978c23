import { defineLlmStep, type StepWorkResult } from '../src/knowledge/define-step.js';
import { promptOverhead } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  KNOWLEDGE_PROMPT_KEYS,
  type KnowledgeConfig,
  knowledgeConfigProperties,
  runKnowledgeLevel,
} from '../src/knowledge/statements.js';

/** Key statements per page, each with the chunks it comes from. */
export default defineLlmStep<LlmStepConfig & KnowledgeConfig>({
  type: 'knowledge_page',
  reads: ['chunks'],
  writes: ['knowledge'],
  description: 'key statements per page, with the chunks they come from',
  promptName: 'knowledge',
  promptKeys: KNOWLEDGE_PROMPT_KEYS,
  requiredKeys: ['sources'],
  properties: knowledgeConfigProperties(5),
  async work(ctx, asker): Promise<StepWorkResult> {
    const r = await runKnowledgeLevel(ctx, asker, ctx.config, 'page');
    return {
      counts: { itemsIn: r.units, itemsOut: r.statements },
      skipReason: r.units === 0 ? r.reason : undefined,
    };
  },
  estimate: (input) => {
    const pages = Math.max(input.pages, input.chunks.length > 0 ? 1 : 0);
    const text = input.chunks.reduce((n, c) => n + c.tokenCount, 0);
    return {
      calls: pages,
      tokensIn: pages * promptOverhead('knowledge', input.config) + text,
      tokensOut: pages * 250,
    };
  },
});
