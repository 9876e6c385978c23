import type { ErrorObject, ValidateFunction } from 'ajv';
import { CpeError, ErrorCodes } from '../errors.js';
import { countTokens } from '../text/tokenizer.js';
import { stableStringify } from '../util/hash.js';
import { ajvFor } from '../util/schema-validators.js';
import { type CachedAnswer, cacheKey, type LlmCache } from './cache.js';
import type { RateLimiter } from './limiter.js';
import { builtinPrompt, fillPrompt } from './prompts.js';
import type {
  ChatAnswer,
  ChatBackend,
  ChatMessage,
  GenerateRequest,
  GenerateResult,
  JsonSchema,
  LlmClient,
  SharedLimits,
} from './types.js';

const validators = new Map<string, ValidateFunction>();

function validatorFor(schema: JsonSchema): ValidateFunction {
  const key = stableStringify(schema);
  let validate = validators.get(key);
  if (!validate) {
    validate = ajvFor('llmAnswer').compile(schema);
    validators.set(key, validate);
  }
  return validate;
}

/** How much of a raw answer goes into an error or a log line. */
export const RAW_ANSWER_LIMIT = 2000;

export const truncate = (text: string, limit = RAW_ANSWER_LIMIT): string =>
  text.length > limit ? `${text.slice(0, limit)}… (${text.length} characters)` : text;

export type ParsedAnswer = { ok: true; value: unknown } | { ok: false; errors: string };

/** ajv's errors as the repair prompt and the logs show them; `at` goes before each path (an item's place in its list). */
function describeErrors(errors: ErrorObject[] | null | undefined, at = ''): string {
  return (errors ?? [])
    .slice(0, 20)
    .map((e) => {
      const extra =
        e.keyword === 'additionalProperties'
          ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})`
          : e.keyword === 'enum'
            ? ` (${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).join(', ')})`
            : '';
      return `${at + e.instancePath || '/'} ${e.message ?? e.keyword}${extra}`;
    })
    .join('; ');
}

/** What keeps a value from matching a schema, as describeErrors says it; '' when it matches. */
export function schemaErrors(value: unknown, schema: JsonSchema, at = ''): string {
  const validate = validatorFor(schema);
  return validate(value) ? '' : describeErrors(validate.errors, at);
}

/** The keywords of a JSON Schema that limit a value rather than shape it: lengths, counts, ranges, patterns. */
const LIMIT_KEYWORDS = new Set([
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
]);

/** A schema without its limits, at every depth: what shapes the value (types, required keys, enums, no other keys) stays. */
export function withoutLimits(schema: JsonSchema): JsonSchema {
  const relax = (value: unknown): unknown =>
    value && typeof value === 'object' && !Array.isArray(value) ? withoutLimits(value as JsonSchema) : value;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (LIMIT_KEYWORDS.has(key)) continue;
    if (key === 'properties' || key === '$defs')
      out[key] = Object.fromEntries(
        Object.entries(value as JsonSchema).map(([name, sub]) => [name, relax(sub)]),
      );
    else if (key === 'anyOf' || key === 'oneOf' || key === 'allOf' || key === 'prefixItems')
      out[key] = (value as unknown[]).map(relax);
    else if (key === 'items' || key === 'additionalProperties' || key === 'not')
      out[key] = Array.isArray(value) ? value.map(relax) : relax(value);
    else out[key] = value;
  }
  return out;
}

/**
 * The answer as JSON, checked against the schema. The text is parsed with JSON.parse only; the one allowance
 * is a Markdown code fence around the whole answer, which some local models add despite the format.
 */
export function parseStructuredAnswer(text: string, schema: JsonSchema): ParsedAnswer {
  let body = text.trim();
  if (body.startsWith('```')) {
    const firstLineEnd = body.indexOf('\n');
    // on one line (```json {"a": 1}```) the info word goes; on several, the whole first line
    body = firstLineEnd < 0 ? body.slice(3).replace(/^[A-Za-z]*/, '') : body.slice(firstLineEnd + 1);
    if (body.trimEnd().endsWith('```')) body = body.trimEnd().slice(0, -3);
    body = body.trim();
  }
  if (body === '') return { ok: false, errors: 'the answer is empty' };
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    return { ok: false, errors: `the answer is not valid JSON: ${(error as Error).message}` };
  }
  const validate = validatorFor(schema);
  if (validate(value)) return { ok: true, value };
  return { ok: false, errors: describeErrors(validate.errors) };
}

const DEFAULT_MAX_TOKENS = 2048;

/**
 * A failed request as a caller gets it that waited for another caller's request: what its calls cost went to the
 * first caller the failure reached, so here it is a copy that costs nothing (`details.cached`, no tokens), as an
 * answer shared that way is a cache hit. A failure that cost nothing (no answer was paid for) stays as it is.
 */
function sharedFailure(error: unknown): unknown {
  if (!(error instanceof CpeError) || !('tokensIn' in error.details)) return error;
  return Object.create(Object.getPrototypeOf(error), {
    ...Object.getOwnPropertyDescriptors(error),
    details: {
      value: { ...error.details, tokensIn: 0, tokensOut: 0, answers: 0, cached: true },
      enumerable: true,
      writable: true,
      configurable: true,
    },
  }) as CpeError;
}

/** The callers waiting on a signal, and the one abort listener that tells them all. */
const waitingOn = new WeakMap<AbortSignal, { callers: Set<() => void>; listener: () => void }>();

/**
 * Calls giveUp when the signal aborts, through one listener per signal however many callers wait on it: a step
 * asks for many answers at once with its one signal (the parts of a long document's summary), and a listener each
 * made Node warn of a possible leak (MaxListenersExceededWarning) past ten. Returns what stops the waiting.
 */
function onAbort(signal: AbortSignal, giveUp: () => void): () => void {
  let waiting = waitingOn.get(signal);
  if (!waiting) {
    const callers = new Set<() => void>();
    const listener = () => {
      waitingOn.delete(signal);
      for (const caller of [...callers]) caller();
    };
    waiting = { callers, listener };
    waitingOn.set(signal, waiting);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { callers, listener } = waiting;
  callers.add(giveUp);
  return () => {
    if (!callers.delete(giveUp) || callers.size > 0) return;
    signal.removeEventListener('abort', listener);
    if (waitingOn.get(signal)?.listener === listener) waitingOn.delete(signal);
  };
}

interface SharedRequest {
  promise: Promise<GenerateResult<unknown>>;
  /** aborts the request, once no caller waits for it any more */
  controller: AbortController;
  waiting: number;
  /** its tokens went to a caller already */
  billed: boolean;
}

/**
 * The LlmClient of cpe: cache lookup, then the provider call under the endpoint's limits, then validation,
 * then at most one repair call that shows the model its answer and the validation errors. An answer that is
 * still invalid fails with INVALID_ANSWER (permanent), the raw answer (truncated) in `details.raw`. A failure after
 * answers were paid for says what they cost in `details`: tokensIn, tokensOut and `answers` (1, or 2 with the
 * repair's). Identical requests in flight at the same time share one call, its answer or its failure.
 */
export class StructuredLlmClient implements LlmClient {
  /** requests being answered, by cache key: a second caller asking the same waits for the first one's answer */
  private readonly inflight = new Map<string, SharedRequest>();

  constructor(
    private readonly backend: ChatBackend,
    private readonly limiter: RateLimiter,
    private readonly cache: LlmCache | undefined,
  ) {}

  get provider() {
    return this.backend.provider;
  }

  get model() {
    return this.backend.model;
  }

  withLimits(limits: Partial<SharedLimits>): LlmClient {
    this.limiter.tighten(limits);
    return this;
  }

  generate<T>(request: GenerateRequest): Promise<GenerateResult<T>> {
    const key = cacheKey({
      provider: this.backend.provider,
      model: this.backend.model,
      system: request.system,
      prompt: request.prompt,
      schema: request.schema,
      images: request.images,
    });
    // requests alike but for their token limit, who checks the limits or their retries are one answer in the cache
    // (checked again against each request's schema when found), and two requests in flight
    const flightKey = `${key}:${request.maxTokens ?? DEFAULT_MAX_TOKENS}:${request.limits ?? 'client'}:${request.maxRetries ?? ''}`;
    let own = this.inflight.get(flightKey);
    if (!own) {
      // the request runs until every caller waiting for it has given up, not until the first one does
      const controller = new AbortController();
      const promise = this.generateUncoalesced(key, { ...request, signal: controller.signal }).finally(() =>
        this.inflight.delete(flightKey),
      );
      own = { promise, controller, waiting: 0, billed: false };
      this.inflight.set(flightKey, own);
    }
    own.waiting++;
    // one answer, spent once: the first caller it reaches gets its tokens, the others get it as a cache hit
    const deliver = (result: GenerateResult<unknown>) => {
      if (!own.billed) {
        own.billed = true;
        return result as GenerateResult<T>;
      }
      return { ...result, tokensIn: 0, tokensOut: 0, cached: true } as GenerateResult<T>;
    };
    // a failure alike: the first caller it reaches is billed for the calls it cost, the others get it as a cache hit
    const fail = (error: unknown): never => {
      if (own.billed) throw sharedFailure(error);
      own.billed = true;
      throw error;
    };
    const signal = request.signal;
    if (!signal) return own.promise.then(deliver, fail);
    return new Promise<GenerateResult<T>>((resolve, reject) => {
      const giveUp = () => {
        if (--own.waiting === 0) own.controller.abort(signal.reason);
        reject(new CpeError(ErrorCodes.CANCELLED, `${this.backend.provider}: request cancelled`));
      };
      if (signal.aborted) return giveUp();
      const stopWaiting = onAbort(signal, giveUp);
      own.promise.then(
        (value) => {
          stopWaiting();
          if (!signal.aborted) resolve(deliver(value));
        },
        (error: unknown) => {
          stopWaiting();
          if (signal.aborted) return;
          try {
            fail(error);
          } catch (delivered) {
            reject(delivered);
          }
        },
      );
    });
  }

  /**
   * An answer the token limit cut off, or one the model declined to give, is not repaired: a repair with the same
   * limit would be cut off again, and a refusal says nothing a schema could fix. The error says which it was.
   */
  private refuseUnfinished(
    request: GenerateRequest,
    answer: ChatAnswer,
    maxTokens: number,
    spent: { tokensIn: number; tokensOut: number; answers: number } = { ...answer, answers: 1 },
  ): void {
    if (!answer.stop) return;
    const who = `${this.backend.provider}/${this.backend.model}`;
    const message =
      answer.stop === 'max_tokens'
        ? `${who}: the answer (${request.schemaName}) was cut off at max_tokens ${maxTokens}; a larger max_tokens in the step's config lets it finish`
        : `${who}: the model declined to answer (${request.schemaName}): ${truncate(answer.text, 300) || 'no text given'}`;
    throw new CpeError(ErrorCodes.INVALID_ANSWER, message, {
      retryable: false,
      details: {
        schemaName: request.schemaName,
        stop: answer.stop,
        raw: truncate(answer.text),
        // what every call of this request cost (a repair's answer cut off: the first answer's tokens too)
        tokensIn: spent.tokensIn,
        tokensOut: spent.tokensOut,
        answers: spent.answers,
      },
    });
  }

  private async generateUncoalesced(key: string, request: GenerateRequest): Promise<GenerateResult<unknown>> {
    const base = { model: this.backend.model, provider: this.backend.provider };
    // what the answer is checked against; the provider is sent request.schema, limits and all
    const accepted = request.limits === 'caller' ? withoutLimits(request.schema) : request.schema;
    const hit = await this.cache?.get(key);
    if (hit && validatorFor(accepted)(hit.value)) {
      return { ...base, value: hit.value, tokensIn: 0, tokensOut: 0, cached: true, repaired: hit.repaired };
    }

    const maxTokens = request.maxTokens ?? DEFAULT_MAX_TOKENS;
    const first: ChatMessage = { role: 'user', text: request.prompt, images: request.images };
    const answer1 = await this.call(request, [first], maxTokens);
    this.refuseUnfinished(request, answer1, maxTokens);
    let tokensIn = answer1.tokensIn;
    let tokensOut = answer1.tokensOut;
    let parsed = parseStructuredAnswer(answer1.text, accepted);
    let repaired = false;
    let lastRaw = answer1.text;

    if (!parsed.ok) {
      const firstErrors = parsed.errors;
      const repairText = fillPrompt(builtinPrompt('repair'), { errors: firstErrors });
      const answer2 = await this.call(
        request,
        [
          first,
          { role: 'assistant', text: truncate(answer1.text, 8000) },
          { role: 'user', text: repairText },
        ],
        maxTokens,
      ).catch((error: unknown) => {
        // the first answer was paid for: its tokens go with the repair call's error, for the step's bill
        if (error instanceof CpeError) Object.assign(error.details, { tokensIn, tokensOut, answers: 1 });
        throw error;
      });
      tokensIn += answer2.tokensIn;
      tokensOut += answer2.tokensOut;
      this.refuseUnfinished(request, answer2, maxTokens, { tokensIn, tokensOut, answers: 2 });
      lastRaw = answer2.text;
      parsed = parseStructuredAnswer(answer2.text, accepted);
      if (!parsed.ok) {
        throw new CpeError(
          ErrorCodes.INVALID_ANSWER,
          `${this.backend.provider}/${this.backend.model}: the answer (${request.schemaName}) does not match the schema after one repair: ${truncate(parsed.errors, 500)}`,
          {
            retryable: false,
            details: {
              schemaName: request.schemaName,
              errors: parsed.errors,
              firstErrors,
              raw: truncate(lastRaw),
              tokensIn,
              tokensOut,
              answers: 2,
            },
          },
        );
      }
      repaired = true;
    }

    const entry: CachedAnswer = { value: parsed.value, tokensIn, tokensOut, repaired };
    await this.cache?.put(key, {
      ...entry,
      provider: this.backend.provider,
      model: this.backend.model,
      schemaName: request.schemaName,
    });
    return { ...base, ...entry, cached: false };
  }

  private call(request: GenerateRequest, messages: ChatMessage[], maxTokens: number) {
    const estimate =
      countTokens(request.system ?? '') +
      messages.reduce((sum, m) => sum + countTokens(m.text), 0) +
      maxTokens / 4;
    return this.limiter.run(
      Math.ceil(estimate),
      async () => {
        const answer = await this.backend.chat({
          system: request.system,
          messages,
          schema: request.schema,
          schemaName: request.schemaName,
          maxTokens,
          signal: request.signal,
        });
        return { value: answer, tokens: answer.tokensIn + answer.tokensOut };
      },
      request.signal,
      request.maxRetries,
    );
  }
}
