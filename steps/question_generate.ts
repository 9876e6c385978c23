import { defineLlmStep } from '../src/knowledge/define-step.js';
import { perChunkEstimate } from '../src/knowledge/estimate.js';
import type { LlmStepConfig } from '../src/knowledge/llm-step.js';
import {
  QUESTION_PROMPT_KEYS,
  type QuestionConfig,
  questionConfigProperties,
  runQuestionGeneration,
} from '../src/knowledge/questions.js';

/** Questions each chunk answers, with the answer. */
export default defineLlmStep<LlmStepConfig & QuestionConfig>({
  type: 'question_generate',
  reads: ['chunks'],
  description: 'questions a chunk answers, with the answer',
  promptName: 'question_generate',
  promptKeys: QUESTION_PROMPT_KEYS,
  requiredKeys: ['text'],
  properties: questionConfigProperties,
  async work(ctx, asker) {
    const r = await runQuestionGeneration(ctx, asker, ctx.config);
    return { counts: { itemsIn: r.chunks, itemsOut: r.questions } };
  },
  estimate: (input) => {
    const min = Number(input.config.min_chunk_tokens ?? 30);
    const perQuestion = 80;
    return perChunkEstimate(
      { ...input, chunks: input.chunks.filter((c) => c.tokenCount >= min) },
      'question_generate',
      perQuestion * Number(input.config.questions_per_chunk ?? 3),
    );
  },
});
