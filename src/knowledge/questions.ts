import { fillPrompt } from '../llm/prompts.js';
import { headingLabel, loadChunks } from './chunks.js';
import { keepItems } from './keep-items.js';
import { type Asker, ask, forEachItem, type KnowledgeContext } from './llm-step.js';

export interface QuestionConfig {
  questions_per_chunk: number;
  /** chunks with fewer tokens get no questions (headings, fragments) */
  min_chunk_tokens: number;
}

export const questionConfigProperties = {
  questions_per_chunk: { type: 'integer', minimum: 1, maximum: 20, default: 3 },
  min_chunk_tokens: { type: 'integer', minimum: 0, default: 30 },
} as const;

export const QUESTION_PROMPT_KEYS = ['count', 'heading', 'text'] as const;

export function questionSchema(max: number) {
  return {
    type: 'object',
    properties: {
      questions: {
        type: 'array',
        maxItems: max,
        items: {
          type: 'object',
          properties: {
            question: { type: 'string', minLength: 3, maxLength: 1000 },
            answer: { type: 'string', minLength: 1, maxLength: 4000 },
          },
          required: ['question', 'answer'],
          additionalProperties: false,
        },
      },
    },
    required: ['questions'],
    additionalProperties: false,
  };
}

interface QuestionAnswer {
  questions: Array<{ question: string; answer: string }>;
}

/** Questions each chunk answers, with the answer. Replaces the document's questions atomically. */
export async function runQuestionGeneration(ctx: KnowledgeContext, asker: Asker, config: QuestionConfig) {
  const chunks = (await loadChunks(ctx.db, ctx.document.id)).filter(
    (c) => c.tokenCount >= config.min_chunk_tokens,
  );
  const schema = questionSchema(config.questions_per_chunk);
  const answers = await forEachItem(
    ctx,
    asker,
    chunks,
    (c) => ({ chunkId: c.id, chunkIndex: c.chunkIndex }),
    (chunk) =>
      ask<QuestionAnswer>(asker, {
        prompt: fillPrompt(asker.template, {
          count: config.questions_per_chunk,
          heading: headingLabel(chunk.headingPath),
          text: chunk.content,
        }),
        schema,
        schemaName: 'questions',
        // a question over a limit is dropped below, not the chunk's whole answer
        limits: 'caller',
        signal: ctx.signal,
      }),
  );
  // each chunk's questions as they are stored, checked against the limits (a blank one is empty then, too short)
  // and asked once: text in NFC ("Übung" composed or decomposed is one question), white space collapsed
  const perChunk = answers.map((answer, i) => {
    const chunk = chunks[i]!;
    const kept = keepItems(
      ctx.log,
      { chunkId: chunk.id, chunkIndex: chunk.chunkIndex },
      { name: 'questions', schema: schema.properties.questions },
      answer?.questions ?? [],
      (q) => ({
        question: q.question.normalize('NFC').replace(/\s+/g, ' ').trim(),
        answer: q.answer.normalize('NFC').trim(),
      }),
    );
    const asked = new Set<string>();
    return kept.filter((q) => {
      const key = q.question.toLowerCase();
      if (asked.has(key)) return false;
      asked.add(key);
      return true;
    });
  });
  const model = `${asker.llm.provider}:${asker.llm.model}`.slice(0, 100);
  const written = await ctx.db.transaction(async (tx) => {
    let rows = 0;
    await tx.run('DELETE FROM generated_questions WHERE document_id = ?', [ctx.document.id]);
    for (const [i, questions] of perChunk.entries()) {
      for (const q of questions) {
        await tx.run(
          'INSERT INTO generated_questions (document_id, chunk_id, question, answer, model) VALUES (?, ?, ?, ?, ?)',
          [ctx.document.id, chunks[i]!.id, q.question, q.answer, model],
        );
        rows++;
      }
    }
    return rows;
  });
  return { chunks: chunks.length, questions: written };
}
