import { fillPrompt } from '../llm/prompts.js';
import { headingLabel, loadChunks } from './chunks.js';
import { type Asker, ask, forEachItem, type KnowledgeContext } from './llm-step.js';

export interface SemanticConfig {
  max_keywords: number;
  max_topics: number;
}

export const semanticConfigProperties = {
  max_keywords: { type: 'integer', minimum: 1, maximum: 50, default: 8 },
  max_topics: { type: 'integer', minimum: 1, maximum: 20, default: 3 },
} as const;

export const SEMANTIC_PROMPT_KEYS = ['heading', 'text', 'max_keywords', 'max_topics'] as const;

export const SENTIMENTS = ['positive', 'neutral', 'negative', 'mixed'] as const;

export function semanticSchema(maxKeywords: number, maxTopics: number) {
  return {
    type: 'object',
    properties: {
      summary: { type: 'string', minLength: 1, maxLength: 2000 },
      keywords: {
        type: 'array',
        maxItems: maxKeywords,
        items: { type: 'string', minLength: 1, maxLength: 100 },
      },
      sentiment: { type: 'string', enum: [...SENTIMENTS] },
      topics: { type: 'array', maxItems: maxTopics, items: { type: 'string', minLength: 1, maxLength: 100 } },
    },
    required: ['summary', 'keywords', 'sentiment', 'topics'],
    additionalProperties: false,
  };
}

interface SemanticAnswer {
  summary: string;
  keywords: string[];
  sentiment: string;
  topics: string[];
}

/** Per chunk: summary, keywords, sentiment, topics, and the model that said so. Replaces the document's rows atomically. */
export async function runSemanticAnalysis(ctx: KnowledgeContext, asker: Asker, config: SemanticConfig) {
  const chunks = await loadChunks(ctx.db, ctx.document.id);
  const schema = semanticSchema(config.max_keywords, config.max_topics);
  const answers = await forEachItem(
    ctx,
    asker,
    chunks,
    (c) => ({ chunkId: c.id, chunkIndex: c.chunkIndex }),
    (chunk) =>
      ask<SemanticAnswer>(asker, {
        prompt: fillPrompt(asker.template, {
          heading: headingLabel(chunk.headingPath),
          text: chunk.content,
          max_keywords: config.max_keywords,
          max_topics: config.max_topics,
        }),
        schema,
        schemaName: 'chunk_semantics',
        signal: ctx.signal,
      }),
  );
  const model = `${asker.llm.provider}:${asker.llm.model}`.slice(0, 100);
  let written = 0;
  await ctx.db.transaction(async (tx) => {
    await tx.run(
      'DELETE FROM chunk_semantics WHERE chunk_id IN (SELECT id FROM chunks WHERE document_id = ?)',
      [ctx.document.id],
    );
    for (const [i, answer] of answers.entries()) {
      if (!answer) continue;
      await tx.run(
        'INSERT INTO chunk_semantics (chunk_id, summary, keywords, sentiment, topics, analysis_model) VALUES (?, ?, ?, ?, ?, ?)',
        [
          chunks[i]!.id,
          answer.summary,
          JSON.stringify(answer.keywords),
          answer.sentiment,
          JSON.stringify(answer.topics),
          model,
        ],
      );
      written++;
    }
  });
  return { chunks: chunks.length, written };
}
