import { defineLlmStep, type StepWorkResult } from '../src/knowledge/define-step.js';
import { promptOverhead } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  KNOWLEDGE_PROMPT_KEYS,
  type KnowledgeConfig,
  knowledgeConfigProperties,
  runKnowledgeLevel,
} from '../src/knowledge/statements.js';

type Config = LlmStepConfig & KnowledgeConfig & { max_section_level: number };

/** Key statements per section (down to max_section_level), each with the chunks it comes from. */
export default defineLlmStep<Config>({
  type: 'knowledge_section',
  reads: ['chunks'],
  writes: ['knowledge'],
  description: 'key statements per section, with the chunks they come from',
  promptName: 'knowledge',
  promptKeys: KNOWLEDGE_PROMPT_KEYS,
  requiredKeys: ['sources'],
  properties: {
    ...knowledgeConfigProperties(7),
    max_section_level: { type: 'integer', minimum: 1, maximum: 6, default: 2 },
  },
  async work(ctx, asker): Promise<StepWorkResult> {
    const r = await runKnowledgeLevel(ctx, asker, ctx.config, 'section', {
      maxSectionLevel: ctx.config.max_section_level,
    });
    return {
      counts: { itemsIn: r.units, itemsOut: r.statements },
      skipReason: r.units === 0 ? r.reason : undefined,
    };
  },
  // sections are not known before structure ran: about one section per three chunks, each read once or twice
  estimate: (input) => {
    const calls = Math.ceil(input.chunks.length / 3);
    const text = input.chunks.reduce((n, c) => n + c.tokenCount, 0);
    return {
      calls,
      tokensIn: calls * promptOverhead('knowledge', input.config) + Math.round(text * 1.5),
      tokensOut: calls * 300,
    };
  },
});
