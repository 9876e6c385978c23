import { defineLlmStep, type StepWorkResult } from '../src/knowledge/define-step.js';
import { promptOverhead } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import { runKnowledgeValidation, VALIDATE_PROMPT_KEYS } from '../src/knowledge/statements.js';

type Config = LlmStepConfig & { max_input_tokens: number };

/** Checks each statement against its source chunks: grounded or unsupported, with the reason. */
export default defineLlmStep<Config>({
  type: 'knowledge_validate',
  reads: ['chunks', 'knowledge'],
  description:
    'checks each knowledge statement against its sources and marks it grounded or unsupported, with the reason',
  promptName: 'knowledge_validate',
  promptKeys: VALIDATE_PROMPT_KEYS,
  requiredKeys: ['statement', 'sources'],
  properties: { max_input_tokens: { type: 'integer', minimum: 200, maximum: 200000, default: 4000 } },
  async work(ctx, asker): Promise<StepWorkResult> {
    const r = await runKnowledgeValidation(ctx, asker, ctx.config);
    return {
      counts: {
        itemsIn: r.items,
        itemsOut: r.grounded + r.unsupported,
        grounded: r.grounded,
        unsupported: r.unsupported,
      },
      skipReason: r.items === 0 ? 'the document has no knowledge statements' : undefined,
    };
  },
  // statements are not known before the knowledge steps ran: about one per chunk, each read with its sources
  estimate: (input) => {
    const calls = input.chunks.length;
    const text = input.chunks.reduce((n, c) => n + c.tokenCount, 0);
    return {
      calls,
      tokensIn: calls * (promptOverhead('knowledge_validate', input.config) + 40) + Math.round(text * 1.5),
      tokensOut: calls * 60,
    };
  },
});
