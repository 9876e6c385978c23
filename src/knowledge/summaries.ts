import { checkTemplate, fillPrompt, resolvePromptTemplate } from '../llm/prompts.js';
import { countTokens } from '../text/tokenizer.js';
import { documentTitle, loadChunks } from './chunks.js';
import { type Asker, ask, forEachItem, type KnowledgeContext } from './llm-step.js';

export interface SummaryConfig {
  /** a document up to this size is summarised in one call; larger ones map-reduce */
  max_input_tokens: number;
  max_words: number;
  /** length of each partial summary */
  map_max_words: number;
  map_prompt_file?: string;
  reduce_prompt_file?: string;
}

export const summaryConfigProperties = {
  max_input_tokens: { type: 'integer', minimum: 500, maximum: 200000, default: 6000 },
  max_words: { type: 'integer', minimum: 20, maximum: 5000, default: 300 },
  map_max_words: { type: 'integer', minimum: 20, maximum: 2000, default: 150 },
  map_prompt_file: { type: 'string', minLength: 1, description: 'template of the partial summaries (map)' },
  reduce_prompt_file: {
    type: 'string',
    minLength: 1,
    description: 'template that joins partial summaries (reduce)',
  },
} as const;

export const SUMMARY_PROMPT_KEYS = ['title', 'text', 'max_words', 'part'] as const;

export const SUMMARY_SCHEMA = {
  type: 'object',
  properties: { summary: { type: 'string', minLength: 1 } },
  required: ['summary'],
  additionalProperties: false,
};

/** Splits texts into groups of at most `budget` tokens (a single larger text is its own group). */
export function groupByBudget(texts: readonly string[], budget: number): string[][] {
  const groups: string[][] = [];
  let current: string[] = [];
  let used = 0;
  for (const text of texts) {
    const tokens = countTokens(text);
    if (current.length > 0 && used + tokens > budget) {
      groups.push(current);
      current = [];
      used = 0;
    }
    current.push(text);
    used += tokens;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** The texts two by two (the last alone when their number is odd). */
function pairsOf(texts: readonly string[]): string[][] {
  const pairs: string[][] = [];
  for (let i = 0; i < texts.length; i += 2) pairs.push(texts.slice(i, i + 2));
  return pairs;
}

/** How many calls a document of these chunk sizes needs (for dry-run estimates). */
export function summaryCalls(chunkTokens: readonly number[], config: SummaryConfig): number {
  const total = chunkTokens.reduce((a, b) => a + b, 0);
  if (total <= config.max_input_tokens) return chunkTokens.length > 0 ? 1 : 0;
  let parts = 0;
  let used = 0;
  for (const t of chunkTokens) {
    if (used > 0 && used + t > config.max_input_tokens) {
      parts++;
      used = 0;
    }
    used += t;
  }
  parts++;
  // each partial summary is about map_max_words * 1.5 tokens; reduce rounds until one call suffices
  let calls = parts;
  let level = parts;
  const perSummary = config.map_max_words * 1.5;
  while (level > 1) {
    level = Math.max(1, Math.ceil((level * perSummary) / config.max_input_tokens));
    calls += level;
  }
  return calls;
}

/** What runSummarize did: a summary written, or none and why (the step ends skipped with the reason). */
export type SummaryResult =
  | { written: true; parts: number; tokens: number }
  | { written: false; parts: number; tokens: number; reason: string };

/**
 * The document summary: one call when the text fits max_input_tokens, else map (a partial summary per group
 * of chunks) and reduce (partial summaries joined, again in groups, until one remains). Replaces the
 * document's summary atomically.
 */
export async function runSummarize(
  ctx: KnowledgeContext,
  asker: Asker,
  config: SummaryConfig,
): Promise<SummaryResult> {
  const chunks = await loadChunks(ctx.db, ctx.document.id);
  if (chunks.length === 0)
    return { written: false, parts: 0, tokens: 0, reason: 'the document has no chunks' };
  const title = await documentTitle(ctx.db, ctx.document.id);
  const total = chunks.reduce((n, c) => n + (c.tokenCount || countTokens(c.content)), 0);
  const mapTemplate = resolvePromptTemplate('summarize_map', { prompt_file: config.map_prompt_file });
  const reduceTemplate = resolvePromptTemplate('summarize_reduce', {
    prompt_file: config.reduce_prompt_file,
  });
  checkTemplate('summarize map prompt', mapTemplate, SUMMARY_PROMPT_KEYS, ['text']);
  checkTemplate('summarize reduce prompt', reduceTemplate, SUMMARY_PROMPT_KEYS, ['text']);
  const summarise = (template: string, text: string, maxWords: number, part: string) =>
    ask<{ summary: string }>(asker, {
      prompt: fillPrompt(template, { title, text, max_words: maxWords, part }),
      schema: SUMMARY_SCHEMA,
      schemaName: 'summary',
      signal: ctx.signal,
    });

  let summary: string;
  let parts = 1;
  if (total <= config.max_input_tokens) {
    summary = (
      await summarise(
        asker.template,
        chunks.map((c) => c.content).join('\n\n'),
        config.max_words,
        'ganzes Dokument',
      )
    ).summary;
  } else {
    let level = groupByBudget(
      chunks.map((c) => c.content),
      config.max_input_tokens,
    );
    parts = level.length;
    let texts = (
      await forEachItem(
        ctx,
        asker,
        level,
        (group) => ({ part: level.indexOf(group) + 1 }),
        (group) =>
          summarise(
            mapTemplate,
            group.join('\n\n'),
            config.map_max_words,
            `Teil ${level.indexOf(group) + 1} von ${level.length}`,
          ),
      )
    )
      .filter((a): a is { summary: string } => a !== undefined)
      .map((a) => a.summary);
    // reduce in rounds until the partial summaries fit one call. Every round at least halves their number: when
    // the budget fits no two of them (a model that answers at length), they are reduced in pairs all the same,
    // else a round would give back as many summaries as it got, for ever.
    while (texts.length > 1 && countTokens(texts.join('\n\n')) > config.max_input_tokens) {
      // answers from the cache come back without the event loop turning: let a signal (SIGTERM) be handled
      await new Promise<void>((resolve) => setImmediate(resolve));
      ctx.signal.throwIfAborted();
      level = groupByBudget(texts, config.max_input_tokens);
      if (level.length === texts.length) level = pairsOf(texts);
      const reduced = await forEachItem(
        ctx,
        asker,
        level,
        (group) => ({ reduceGroup: level.indexOf(group) + 1 }),
        (group) => summarise(reduceTemplate, group.join('\n\n'), config.map_max_words, 'Zwischenstufe'),
      );
      texts = reduced.filter((a): a is { summary: string } => a !== undefined).map((a) => a.summary);
    }
    summary =
      texts.length === 1 && countTokens(texts[0]!) <= config.max_words * 2
        ? texts[0]!
        : (await summarise(reduceTemplate, texts.join('\n\n'), config.max_words, 'Gesamt')).summary;
  }
  const model = `${asker.llm.provider}:${asker.llm.model}`.slice(0, 100);
  // a blank summary (the schema's minLength counts white space) is no summary: the old one goes, none is stored
  if (summary.trim() === '') {
    await ctx.db.run('DELETE FROM document_summaries WHERE document_id = ?', [ctx.document.id]);
    return { written: false, parts, tokens: total, reason: 'the model returned a blank summary' };
  }
  await ctx.db.transaction(async (tx) => {
    await tx.run('DELETE FROM document_summaries WHERE document_id = ?', [ctx.document.id]);
    await tx.run('INSERT INTO document_summaries (document_id, summary, model) VALUES (?, ?, ?)', [
      ctx.document.id,
      summary.trim(),
      model,
    ]);
  });
  return { written: true, parts, tokens: total };
}
