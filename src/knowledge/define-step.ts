import type { StepContext } from '../engine/plugin.js';
import type { Estimate, EstimateInput, LlmStepPlugin } from './estimate.js';
import {
  type Asker,
  type LlmStepConfig,
  llmStepSchema,
  makeAsker,
  openLlm,
  stepTemplate,
} from './llm-step.js';

/** What a knowledge function returns: counts for the step run, or a reason the step had nothing to do. */
export type StepWorkResult = { counts: Record<string, number>; skipReason?: string };

export interface LlmStepDefinition<C extends LlmStepConfig> {
  type: string;
  description: string;
  /** kinds of data read and written (StepPlugin.reads / writes) */
  reads?: readonly string[];
  writes?: readonly string[];
  /** prompts/<promptName>.md is the default template */
  promptName: string;
  /** placeholders the template may use / must use */
  promptKeys: readonly string[];
  requiredKeys: readonly string[];
  /** the step's own config keys (the common LLM keys are added) */
  properties: Record<string, unknown>;
  work(ctx: StepContext<C>, asker: Asker): Promise<StepWorkResult>;
  estimate(input: EstimateInput): Estimate;
}

/**
 * The shape every LLM step shares: resolve the LLM (or end skipped with the reason), check the prompt
 * template, run the work, report counts and tokens (also when the work fails: the calls were made).
 */
export function defineLlmStep<C extends LlmStepConfig>(definition: LlmStepDefinition<C>): LlmStepPlugin<C> {
  return {
    type: definition.type,
    description: definition.description,
    scope: 'document',
    reads: definition.reads,
    writes: definition.writes,
    configSchema: llmStepSchema(definition.properties),
    // a prompt file that cannot be read, or a template with unknown or missing placeholders, is refused at
    // planning, not once an LLM is configured and every document fails on it
    checkConfig(config: C) {
      stepTemplate(
        definition.type,
        definition.promptName,
        config,
        definition.promptKeys,
        definition.requiredKeys,
      );
      return [];
    },
    async run(ctx: StepContext<C>) {
      const opened = await openLlm(ctx);
      if ('skipped' in opened) return opened.skipped;
      const template = stepTemplate(
        definition.type,
        definition.promptName,
        ctx.config,
        definition.promptKeys,
        definition.requiredKeys,
      );
      const asker = makeAsker(opened.llm, ctx.config, template);
      try {
        const result = await definition.work(ctx, asker);
        ctx.report(result.counts);
        if (result.skipReason) return ctx.skip(result.skipReason);
      } finally {
        ctx.report(asker.tally.counts());
      }
    },
    estimate: definition.estimate,
  };
}
