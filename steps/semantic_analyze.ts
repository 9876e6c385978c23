import { defineLlmStep } from '../src/knowledge/define-step.js';
import { perChunkEstimate } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  runSemanticAnalysis,
  SEMANTIC_PROMPT_KEYS,
  type SemanticConfig,
  semanticConfigProperties,
} from '../src/knowledge/semantics.js';

/** Per chunk: summary, keywords, sentiment, topics, analysis_model. */
export default defineLlmStep<LlmStepConfig & SemanticConfig>({
  type: 'semantic_analyze',
  reads: ['chunks'],
  description: 'per chunk: summary, keywords, sentiment, topics and analysis_model (chunk_semantics)',
  promptName: 'semantic_analyze',
  promptKeys: SEMANTIC_PROMPT_KEYS,
  requiredKeys: ['text'],
  properties: semanticConfigProperties,
  async work(ctx, asker) {
    const r = await runSemanticAnalysis(ctx, asker, ctx.config);
    return { counts: { itemsIn: r.chunks, itemsOut: r.written } };
  },
  estimate: (input) => perChunkEstimate(input, 'semantic_analyze', 150),
});
