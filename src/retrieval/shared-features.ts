import { LOCAL_EMBEDDER_MODEL, localHashFeatureMatcher } from '../embed/local-hash.js';
import { type ChunkContext, chunkEmbedInput, embedCharLimit, prepareEmbedText } from '../embed/prepare.js';
import type { Embedder } from '../embed/types.js';

/**
 * The exact score of the text embedded for a chunk (its context line and content) against the query: 0 when they
 * share no feature.
 */
export type ExactFeatureScore = (content: string, context: ChunkContext) => number;

/**
 * For the local embedder, a chunk's score by the exact features it shares with the query (a word, a pair of
 * words, a character n-gram), each in a dimension of its own; undefined for an embedder whose features cannot be
 * named (a dense model: Ollama's). The local embedder's cosine is only an estimate of it: its features share 1,024
 * buckets with random signs, so about half of all chunks score above 0 with a query they have nothing in common
 * with ("xq" with every chunk of a law), and for a short query the one chunk that holds its word may score below
 * hundreds that do not. The chunk's text is prepared as the embed step prepared it (chunkEmbedText's two steps),
 * the query's as it was embedded.
 */
export function exactFeatureScore(
  embedder: Pick<Embedder, 'kind' | 'model'>,
  queryText: string,
  maxEmbedChars: number,
): ExactFeatureScore | undefined {
  if (embedder.kind !== 'local' || embedder.model !== LOCAL_EMBEDDER_MODEL) return undefined;
  const matcher = localHashFeatureMatcher(queryText);
  const maxChars = embedCharLimit(embedder, maxEmbedChars);
  // (score runs the quick test itself: a text it rules out costs its preparation and folding, no features)
  return (content, context) => matcher.score(prepareEmbedText(chunkEmbedInput(content, context), maxChars));
}
