import type { StepContext, StepOutcome } from '../engine/plugin.js';
import { CpeError, ErrorCodes } from '../errors.js';
import { builtinPrompt, checkTemplate, resolvePromptTemplate } from '../llm/prompts.js';
import { truncate } from '../llm/structured.js';
import type { GenerateRequest, GenerateResult, LlmClient } from '../llm/types.js';

/** Config keys every LLM step has (snake_case like all step config). */
export interface LlmStepConfig {
  /** anthropic | ollama; default: the configured provider */
  provider?: 'anthropic' | 'ollama';
  /** default: the provider's default model */
  model?: string;
  /** inline prompt template (wins over prompt_file) */
  prompt?: string;
  /** prompt template file */
  prompt_file?: string;
  /** cap on one answer's tokens */
  max_tokens: number;
  /** requests of this step in flight at once (also tightens the provider's shared limit) */
  concurrency: number;
  /** 0 = no limit */
  requests_per_minute: number;
  /** 0 = no limit */
  tokens_per_minute: number;
  /** retries of 429/529/5xx/network failures, of each of this step's requests (no shared limit) */
  max_retries: number;
  /** items (chunks, pages, ...) that may end without a valid answer before the step fails */
  max_failed_items: number;
}

export const llmConfigProperties = {
  provider: {
    type: 'string',
    enum: ['anthropic', 'ollama'],
    description: 'LLM provider; default: the configured one',
  },
  model: { type: 'string', minLength: 1, description: "model name; default: the provider's default" },
  prompt: {
    type: 'string',
    description: 'inline prompt template with {{placeholders}} (wins over prompt_file)',
  },
  prompt_file: { type: 'string', minLength: 1, description: 'prompt template file (Markdown)' },
  max_tokens: {
    type: 'integer',
    minimum: 64,
    maximum: 64000,
    default: 2048,
    description: 'cap on one answer',
  },
  concurrency: { type: 'integer', minimum: 1, maximum: 64, default: 4, description: 'requests in flight' },
  requests_per_minute: { type: 'integer', minimum: 0, default: 0, description: '0 = unlimited' },
  tokens_per_minute: { type: 'integer', minimum: 0, default: 0, description: '0 = unlimited' },
  max_retries: {
    type: 'integer',
    minimum: 0,
    maximum: 20,
    default: 5,
    description: 'retries of 429/529/5xx/timeouts',
  },
  max_failed_items: {
    type: 'integer',
    minimum: 0,
    default: 0,
    description:
      'items without a valid answer tolerated before the step fails (an invalid answer gets one repair; one cut off or refused, none)',
  },
} as const;

/** The config schema of an LLM step: the common keys plus the step's own. */
export function llmStepSchema(properties: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'object',
    additionalProperties: false,
    properties: { ...llmConfigProperties, ...properties },
  };
}

/** The context the knowledge functions need (a StepContext fits; analyze passes its own). */
export type KnowledgeContext = Pick<StepContext, 'db' | 'document' | 'log' | 'signal' | 'providers' | 'memo'>;

/**
 * Calls, tokens and failures of one step run, reported once at the end: `calls` are requests the provider answered
 * (a repair call is not one more: `repaired` counts those), `cached` requests answered from the cache or by
 * another caller's request in flight.
 */
export class LlmTally {
  calls = 0;
  cached = 0;
  repaired = 0;
  failed = 0;
  tokensIn = 0;
  tokensOut = 0;

  add(result: GenerateResult<unknown>): void {
    if (result.cached) this.cached++;
    else this.calls++;
    if (result.repaired && !result.cached) this.repaired++;
    this.tokensIn += result.tokensIn;
    this.tokensOut += result.tokensOut;
  }

  counts(): Record<string, number> {
    return {
      tokensIn: this.tokensIn,
      tokensOut: this.tokensOut,
      llmCalls: this.calls,
      llmCached: this.cached,
      llmRepaired: this.repaired,
      itemsFailed: this.failed,
    };
  }
}

/** Everything a knowledge function needs to ask the model. */
export interface Asker {
  llm: LlmClient;
  tally: LlmTally;
  config: LlmStepConfig;
  system: string;
  /** the step's template (config override or built-in) */
  template: string;
}

/** The LLM of a step, or the skip outcome with the reason when none is configured. */
export async function openLlm<C extends LlmStepConfig>(
  ctx: StepContext<C>,
): Promise<{ llm: LlmClient } | { skipped: StepOutcome }> {
  const resolution = await ctx.providers.llm({ provider: ctx.config.provider, model: ctx.config.model });
  if (!resolution.llm) return { skipped: ctx.skip(resolution.reason) };
  resolution.llm.withLimits({
    concurrency: ctx.config.concurrency,
    requestsPerMinute: ctx.config.requests_per_minute || undefined,
    tokensPerMinute: ctx.config.tokens_per_minute || undefined,
  });
  return { llm: resolution.llm };
}

/** The step's prompt template, checked for its placeholders before any call. */
export function stepTemplate(
  stepType: string,
  promptName: string,
  config: LlmStepConfig,
  known: readonly string[],
  required: readonly string[],
): string {
  const template = resolvePromptTemplate(promptName, config);
  checkTemplate(`${stepType} prompt`, template, known, required);
  return template;
}

export function makeAsker(
  llm: LlmClient,
  config: LlmStepConfig,
  template: string,
  tally = new LlmTally(),
): Asker {
  return { llm, tally, config, system: builtinPrompt('system').trim(), template };
}

/** One structured call, tallied. */
export async function ask<T>(
  asker: Asker,
  request: Omit<GenerateRequest, 'system' | 'maxTokens' | 'maxRetries'>,
): Promise<T> {
  try {
    const result = await asker.llm.generate<T>({
      ...request,
      system: asker.system,
      maxTokens: asker.config.max_tokens,
      // the step's own: other steps on the endpoint keep theirs
      maxRetries: asker.config.max_retries,
    });
    asker.tally.add(result);
    return result.value;
  } catch (error) {
    billFailure(asker.tally, error);
    throw error;
  }
}

/**
 * A failed call's cost, tallied as an answer's would be: the attempts were paid for too (an answer that stayed
 * invalid, or a first answer whose repair call failed: the client puts what was spent into the error's details),
 * a repair call counted as one. A failure another caller's request met and was billed for is a cache hit here.
 */
export function billFailure(tally: LlmTally, error: unknown): void {
  if (!(error instanceof CpeError)) return;
  if (error.details.cached === true) {
    tally.cached++;
    return;
  }
  const spentIn = Number(error.details.tokensIn ?? 0);
  const spentOut = Number(error.details.tokensOut ?? 0);
  if (error.code !== ErrorCodes.INVALID_ANSWER && spentIn + spentOut === 0) return;
  tally.calls++;
  if (Number(error.details.answers ?? 0) > 1) tally.repaired++;
  tally.tokensIn += spentIn;
  tally.tokensOut += spentOut;
}

/**
 * Runs `work` for every item with at most `concurrency` at once. An item without a valid answer (invalid after
 * the repair, cut off at max_tokens, declined) is logged (with the raw answer, truncated) and counted; other errors
 * (provider down after retries, cancel) stop the step. More failed items than `max_failed_items` fail the step
 * before anything is written.
 */
export async function forEachItem<I, R>(
  ctx: Pick<KnowledgeContext, 'log' | 'signal'>,
  asker: Pick<Asker, 'tally' | 'config'>,
  items: readonly I[],
  describe: (item: I) => Record<string, unknown>,
  work: (item: I) => Promise<R>,
): Promise<Array<R | undefined>> {
  const results: Array<R | undefined> = new Array(items.length).fill(undefined);
  let next = 0;
  let fatal: unknown;
  let failed = 0;
  // The failed item first in the list, whose reason the step's error quotes: an answer cut off at max_tokens or
  // declined is not repaired, and only the item's own message says which it was.
  let first: { index: number; message: string } | undefined;
  const worker = async () => {
    while (fatal === undefined && next < items.length) {
      if (ctx.signal.aborted) {
        fatal = new CpeError(ErrorCodes.CANCELLED, 'cancelled');
        return;
      }
      const index = next++;
      const item = items[index]!;
      try {
        results[index] = await work(item);
      } catch (error) {
        if (error instanceof CpeError && error.code === ErrorCodes.INVALID_ANSWER) {
          failed++;
          asker.tally.failed++;
          if (!first || index < first.index) first = { index, message: error.message };
          ctx.log.error(`no valid LLM answer: ${error.message}`, {
            ...describe(item),
            errors: error.details.errors,
            raw: truncate(String(error.details.raw ?? '')),
          });
        } else if (fatal === undefined) {
          fatal = error;
        }
      }
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(asker.config.concurrency, Math.max(1, items.length)) }, worker),
  );
  if (fatal !== undefined) throw fatal;
  if (failed > asker.config.max_failed_items) {
    throw new CpeError(
      ErrorCodes.INVALID_ANSWER,
      `${failed} of ${items.length} items got no valid LLM answer (max_failed_items: ${asker.config.max_failed_items}); nothing was written. First failure: ${first?.message}`,
      { retryable: false },
    );
  }
  return results;
}
