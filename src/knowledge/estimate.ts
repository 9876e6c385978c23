import type { StepPlugin } from '../engine/plugin.js';
import { builtinPrompt, resolvePromptTemplate } from '../llm/prompts.js';
import { countTokens } from '../text/tokenizer.js';

/** What `cpe run --dry-run` hands an LLM step to estimate its cost for one document. */
export interface EstimateInput {
  config: Record<string, any>;
  chunks: ReadonlyArray<{ tokenCount: number }>;
  pages: number;
}

export interface Estimate {
  calls: number;
  tokensIn: number;
  tokensOut: number;
}

/** A step plugin that calls an LLM, with its dry-run estimate (first run, no cache hits, no repairs). */
export type LlmStepPlugin<C = any> = StepPlugin<C> & { estimate(input: EstimateInput): Estimate };

/** Tokens of the system prompt plus the step's template (its fixed cost per call). */
export function promptOverhead(promptName: string, config: Record<string, any>): number {
  let template: string;
  try {
    template = resolvePromptTemplate(promptName, config);
  } catch {
    template = builtinPrompt(promptName);
  }
  return countTokens(builtinPrompt('system')) + countTokens(template);
}

/** One call per chunk: overhead + the chunk in, about `outPerCall` out. */
export function perChunkEstimate(
  input: EstimateInput,
  promptName: string,
  outPerCall: number,
  extraInPerCall = 0,
): Estimate {
  const overhead = promptOverhead(promptName, input.config) + extraInPerCall;
  return {
    calls: input.chunks.length,
    tokensIn: input.chunks.reduce((sum, c) => sum + overhead + c.tokenCount, 0),
    tokensOut: input.chunks.length * outPerCall,
  };
}

export const sumEstimates = (...parts: Estimate[]): Estimate =>
  parts.reduce(
    (a, b) => ({
      calls: a.calls + b.calls,
      tokensIn: a.tokensIn + b.tokensIn,
      tokensOut: a.tokensOut + b.tokensOut,
    }),
    {
      calls: 0,
      tokensIn: 0,
      tokensOut: 0,
    },
  );
