import type { StepContext } from '../src/engine/plugin.js';
import { ENTITY_PROMPT_KEYS, type EntityConfig, entityConfigProperties, runEntityExtraction } from '../src/knowledge/entities.js';
import { type LlmStepPlugin, perChunkEstimate } from '../src/knowledge/estimate.js';
import { type LlmStepConfig, llmStepSchema, makeAsker, openLlm, stepTemplate } from '../src/knowledge/llm-step.js';

type Config = LlmStepConfig & EntityConfig;

/** Entities per chunk (name, type, description), normalised and merged across documents. */
const plugin: LlmStepPlugin<Config> = {
  type: 'entity_extract',
  description: 'entities per chunk (name, type, description), normalised and merged across documents',
  scope: 'document',
  configSchema: llmStepSchema(entityConfigProperties),
  async run(ctx: StepContext<Config>) {
    const opened = await openLlm(ctx);
    if ('skipped' in opened) return opened.skipped;
    const template = stepTemplate('entity_extract', 'entity_extract', ctx.config, ENTITY_PROMPT_KEYS, ['text']);
    const asker = makeAsker(opened.llm, ctx.config, template);
    try {
      const result = await runEntityExtraction(ctx, asker, ctx.config);
      ctx.report({
        itemsIn: result.chunks,
        itemsOut: result.mentions,
        entities: result.entities,
        entitiesCreated: result.created,
        entitiesEmbedded: result.embedded,
        entitiesMerged: result.merged,
      });
    } finally {
      ctx.report(asker.tally.counts());
    }
  },
  estimate: (input) => perChunkEstimate(input, 'entity_extract', 250),
};

export default plugin;
