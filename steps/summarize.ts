import { defineLlmStep, type StepWorkResult } from '../src/knowledge/define-step.js';
import { promptOverhead } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  runSummarize,
  SUMMARY_PROMPT_KEYS,
  type SummaryConfig,
  summaryCalls,
  summaryConfigProperties,
} from '../src/knowledge/summaries.js';

/** The document summary; map-reduce over the chunks when the document is long. */
export default defineLlmStep<LlmStepConfig & SummaryConfig>({
  type: 'summarize',
  reads: ['chunks'],
  description: 'document summary, map-reduce over chunks for long documents',
  promptName: 'summarize',
  promptKeys: SUMMARY_PROMPT_KEYS,
  requiredKeys: ['text'],
  properties: summaryConfigProperties,
  async work(ctx, asker): Promise<StepWorkResult> {
    const r = await runSummarize(ctx, asker, ctx.config);
    // the calls it made (a blank summary is paid for too) are reported with the skip: defineLlmStep reports the tally
    if (!r.written) return { counts: { itemsIn: r.parts, itemsOut: 0 }, skipReason: r.reason };
    return { counts: { itemsIn: r.parts, itemsOut: 1 } };
  },
  estimate: (input) => {
    const config = {
      max_input_tokens: 6000,
      max_words: 300,
      map_max_words: 150,
      ...input.config,
    } as SummaryConfig;
    const calls = summaryCalls(
      input.chunks.map((c) => c.tokenCount),
      config,
    );
    const text = input.chunks.reduce((n, c) => n + c.tokenCount, 0);
    const overhead = promptOverhead('summarize', input.config);
    // map reads the whole text once; the reduce rounds read the partial summaries
    const partials = calls > 1 ? (calls - 1) * config.map_max_words * 1.5 : 0;
    return {
      calls,
      tokensIn: calls * overhead + text + partials,
      tokensOut: calls * config.map_max_words * 1.5,
    };
  },
});
