import { defineLlmStep, type StepWorkResult } from '../src/knowledge/define-step.js';
import { promptOverhead } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  runTaxonomyBuild,
  TAXONOMY_PROMPT_KEYS,
  type TaxonomyConfig,
  taxonomyConfigProperties,
} from '../src/knowledge/taxonomy.js';

/** Files the document into the shared hierarchical taxonomy, with confidence. */
export default defineLlmStep<LlmStepConfig & TaxonomyConfig>({
  type: 'taxonomy_build',
  reads: ['chunks'],
  description: "a hierarchical taxonomy (terms with parents) and the document's place in it, with confidence",
  promptName: 'taxonomy_build',
  promptKeys: TAXONOMY_PROMPT_KEYS,
  requiredKeys: ['text'],
  properties: taxonomyConfigProperties,
  async work(ctx, asker): Promise<StepWorkResult> {
    const r = await runTaxonomyBuild(ctx, asker, ctx.config);
    if (r.empty) return { counts: { itemsIn: 0 }, skipReason: 'the document has no text' };
    return { counts: { itemsIn: 1, itemsOut: r.categories } };
  },
  estimate: (input) => {
    if (input.chunks.length === 0) return { calls: 0, tokensIn: 0, tokensOut: 0 };
    const text = Math.min(
      input.chunks.reduce((n, c) => n + c.tokenCount, 0),
      Number(input.config.max_input_tokens ?? 3000),
    );
    return {
      calls: 1,
      tokensIn: promptOverhead('taxonomy_build', input.config) + text + 600,
      tokensOut: 120,
    };
  },
});
