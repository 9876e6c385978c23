import { schemaErrors } from '../llm/structured.js';
import type { JsonSchema } from '../llm/types.js';
import type { KnowledgeContext } from './llm-step.js';

/** A list in a model's answer: its name (the answer's key) and its schema (`items`, and `maxItems` when capped). */
export interface AnswerList {
  name: string;
  schema: JsonSchema;
}

/**
 * The items of a list the model answered that keep the schema's limits, one by one: each item is cleaned as it
 * will be stored (`clean`), then checked against the item schema; one over a limit (a name empty or too long, a
 * confidence above 1, ...) is dropped, and the list is cut to its maxItems. What was dropped or cut is logged (a
 * warning, with `where`). The answer's shape was checked already (the request's `limits: 'caller'`): a name of ""
 * and one of "   " are one case here, not a failed answer and a quiet skip.
 */
export function keepItems<T>(
  log: KnowledgeContext['log'],
  where: Record<string, unknown>,
  list: AnswerList,
  items: readonly T[],
  clean: (item: T) => T = (item) => item,
): T[] {
  const itemSchema = (list.schema.items ?? {}) as JsonSchema;
  const kept: T[] = [];
  const dropped: string[] = [];
  for (const [i, item] of items.entries()) {
    const cleaned = clean(item);
    const errors = schemaErrors(cleaned, itemSchema, `/${list.name}/${i}`);
    if (errors) dropped.push(errors);
    else kept.push(cleaned);
  }
  const max = typeof list.schema.maxItems === 'number' ? list.schema.maxItems : kept.length;
  const cut = Math.max(0, kept.length - max);
  if (dropped.length > 0 || cut > 0) {
    const parts = [
      ...(dropped.length > 0
        ? [`dropped ${dropped.length} of ${items.length} over a limit: ${dropped.join('; ')}`]
        : []),
      ...(cut > 0 ? [`cut ${kept.length} to the first ${max} (maxItems)`] : []),
    ];
    log.warn(`${list.name} in the answer: ${parts.join('; ')}`, {
      ...where,
      dropped: dropped.length,
      cut,
    });
  }
  return kept.slice(0, max);
}
