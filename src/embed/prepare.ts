import { normalizeText } from '../extract/normalize.js';
import { cutText } from '../text/cut.js';
import { textHash } from './cache.js';
import type { Embedder } from './types.js';

/** The original system's default cap: mxbai-embed-large sees at most 512 tokens, about 800 German characters. */
export const DEFAULT_MAX_EMBED_CHARS = 800;

/**
 * What `/\s+/g` replaced by one space changes: a run of two or more whitespace characters, or one that is not a
 * plain space. The single spaces between words, most matches of `\s+`, are left alone: the replace then copies
 * long stretches instead of splicing at every word (half the time over the shared corpus, the same output).
 */
const WHITESPACE_TO_COLLAPSE = /\s{2,}|[^\S ]/g;

/**
 * The text that is embedded for a chunk, as the original embed.py prepared it: runs of dots (table-of-contents
 * leaders, "Kapitel 3 ........ 12") carry no meaning but use up the model's context, so they collapse to one
 * "..."; whitespace runs collapse to one space; the result is capped at maxChars (Infinity: no cap).
 */
export function prepareEmbedText(text: string, maxChars: number = DEFAULT_MAX_EMBED_CHARS): string {
  const collapsed = text
    .replace(/(?:\.\s?){4,}/g, '... ')
    .replace(/[…]{2,}/g, '…')
    .replace(WHITESPACE_TO_COLLAPSE, ' ')
    .trim();
  return cutText(collapsed, maxChars);
}

/**
 * The cap for an embedder: max_embed_chars exists for models with a context window (Ollama's mxbai-embed-large
 * reads 512 tokens and silently drops the rest), so it applies to them. The local hashing embedder has no
 * window: cutting would only throw away the part of the chunk after the first 800 characters, which then could
 * never be found, so it always reads the whole chunk.
 */
export function embedCharLimit(embedder: Pick<Embedder, 'kind'>, maxChars: number): number {
  return embedder.kind === 'local' ? Number.POSITIVE_INFINITY : maxChars;
}

/**
 * The text embedded for a search query, prepared as a chunk's text is, so that the same words give the same
 * features: first the normalisation every extractor applies to a document's text (normalizeText: soft hyphens and
 * control characters removed, NFC), which a chunk went through and a typed or pasted query did not; then
 * prepareEmbedText, capped as the same embedder's chunks are (embedCharLimit: the local embedder reads all of it).
 */
export function queryEmbedText(query: string, embedder: Pick<Embedder, 'kind'>, maxChars: number): string {
  return prepareEmbedText(normalizeText(query), embedCharLimit(embedder, maxChars));
}

export interface ChunkContext {
  /** documents.title (null or empty: none) */
  title?: string | null;
  /** chunks.heading_path: the headings above the chunk, outermost first */
  headingPath?: readonly string[];
}

/**
 * One line that says where a chunk stands: the document title and the heading path, "Titel › Kapitel › § 3".
 * A chunk's own text often does not name its topic (a paragraph of a law says "Der Urlaub beträgt…" under
 * "§ 3 Dauer des Urlaubs" in the "Mindesturlaubsgesetz"), so the line is embedded in front of the text. The
 * title is left out when the first heading already starts with it (laws: "Arbeitszeitgesetz (ArbZG)").
 */
export function chunkContextLine(context: ChunkContext): string {
  const headings = (context.headingPath ?? [])
    .map((h) => h.replace(WHITESPACE_TO_COLLAPSE, ' ').trim())
    .filter((h) => h !== '');
  const title = (context.title ?? '').replace(WHITESPACE_TO_COLLAPSE, ' ').trim();
  const parts =
    title !== '' && !(headings.length > 0 && headings[0]!.toLowerCase().startsWith(title.toLowerCase()))
      ? [title, ...headings]
      : headings;
  return parts.join(' › ');
}

/**
 * The exact text embedded for a chunk (and hashed for the embedding cache): the context line, then the chunk's
 * content, prepared and capped as prepareEmbedText does. The context counts towards the cap, so a model with
 * a window still gets at most maxChars.
 */
export function chunkEmbedText(content: string, context: ChunkContext, maxChars: number): string {
  return prepareEmbedText(chunkEmbedInput(content, context), maxChars);
}

/** What chunkEmbedText prepares: the context line, a blank line and the content (the content alone without a line). */
export function chunkEmbedInput(content: string, context: ChunkContext): string {
  const line = chunkContextLine(context);
  return line === '' ? content : `${line}\n\n${content}`;
}

/**
 * Chunk inputs (chunkEmbedInput) prepared as chunkEmbedText prepares them, capped at maxChars, with their cache
 * keys (textHash): the one place both are made, on the calling thread or on the local embedder's threads.
 */
export function prepareChunkInputs(
  inputs: readonly string[],
  maxChars: number,
): { texts: string[]; hashes: string[] } {
  const texts = inputs.map((input) => prepareEmbedText(input, maxChars));
  return { texts, hashes: texts.map(textHash) };
}
