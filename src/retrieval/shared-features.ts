import { LOCAL_EMBEDDER_MODEL, localHashFeatureMatcher } from '../embed/local-hash.js';
import { type ChunkContext, chunkEmbedInput, embedCharLimit, prepareEmbedText } from '../embed/prepare.js';
import type { Embedder } from '../embed/types.js';

/** Whether the text embedded for a chunk (its context line and content) has a feature of the query. */
export type SharedFeatureTest = (content: string, context: ChunkContext) => boolean;

/**
 * For the local embedder, the test whether a chunk shares an exact feature (a word, a pair of words, a character
 * n-gram) with the query; undefined for an embedder whose features cannot be named (a dense model: Ollama's).
 * The local embedder's cosine cannot tell: its features share 1,024 buckets with random signs, so about half of
 * all chunks score above 0 with a query they have nothing in common with ("xq" with every chunk of a law).
 * The chunk's text is prepared as the embed step prepared it (chunkEmbedText's two steps), the query's as it was
 * embedded.
 */
export function sharedFeatureTest(
  embedder: Pick<Embedder, 'kind' | 'model'>,
  queryText: string,
  maxEmbedChars: number,
): SharedFeatureTest | undefined {
  if (embedder.kind !== 'local' || embedder.model !== LOCAL_EMBEDDER_MODEL) return undefined;
  const matcher = localHashFeatureMatcher(queryText);
  const maxChars = embedCharLimit(embedder, maxEmbedChars);
  return (content, context) => {
    const input = chunkEmbedInput(content, context);
    // preparing changes only what lies between words (dot leaders, whitespace) and where the text ends, so a text
    // the quick test rules out before is ruled out after it too: most texts are not prepared
    return matcher.mayShare(input) && matcher.shares(prepareEmbedText(input, maxChars));
  };
}
