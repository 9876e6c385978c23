import type { StepContext } from '../src/engine/plugin.js';
import type { LlmStepPlugin } from '../src/knowledge/estimate.js';
import { promptOverhead } from '../src/knowledge/estimate.js';
import { type LlmStepConfig, LlmTally, llmStepSchema, stepTemplate } from '../src/knowledge/llm-step.js';
import {
  runVisionAnalysis,
  VISION_PROMPT_KEYS,
  type VisionConfig,
  visionConfigProperties,
} from '../src/knowledge/vision-pages.js';
import { builtinPrompt } from '../src/llm/prompts.js';

type Config = LlmStepConfig & VisionConfig;

/**
 * Pages that hold images or tables, rendered to PNG and described by the vision model (Ollama
 * llama3.2-vision:11b by default); the description lands in document_pages.metadata.vision.
 */
const template = (config: Config) =>
  stepTemplate('vision_analyze', 'vision_analyze', config, VISION_PROMPT_KEYS, []);

const plugin: LlmStepPlugin<Config> = {
  type: 'vision_analyze',
  description:
    'render pages that hold images or tables to PNG, describe them with the vision model, store on the page',
  scope: 'document',
  writes: ['vision'],
  configSchema: llmStepSchema({
    ...visionConfigProperties,
    max_tokens: { type: 'integer', minimum: 64, maximum: 64000, default: 1500 },
  }),
  // the prompt file and template are checked at planning, not once a vision model is configured
  checkConfig(config: Config) {
    template(config);
    return [];
  },
  async run(ctx: StepContext<Config>) {
    const resolution = await ctx.providers.vision({
      model: ctx.config.model,
      ...(ctx.config.provider ? { provider: ctx.config.provider } : {}),
    } as {
      model?: string;
    });
    if (!resolution.vision) return ctx.skip(resolution.reason);
    const vision = resolution.vision.withLimits({
      concurrency: ctx.config.concurrency,
      requestsPerMinute: ctx.config.requests_per_minute || undefined,
      tokensPerMinute: ctx.config.tokens_per_minute || undefined,
    });
    const asker = {
      tally: new LlmTally(),
      config: ctx.config,
      system: builtinPrompt('system').trim(),
      template: template(ctx.config),
    };
    try {
      const r = await runVisionAnalysis(ctx, vision, asker, ctx.config);
      ctx.report({ itemsIn: r.candidates, itemsOut: r.described, pagesNotRendered: r.notRendered });
      if (r.described === 0 && r.reason) return ctx.skip(r.reason);
    } finally {
      ctx.report(asker.tally.counts());
    }
  },
  // pages with images or tables are not known before page_split: every page is counted (an upper bound)
  estimate: (input) => ({
    calls: input.pages,
    tokensIn: input.pages * (promptOverhead('vision_analyze', input.config) + 400 + 1600),
    tokensOut: input.pages * 300,
  }),
};

export default plugin;
