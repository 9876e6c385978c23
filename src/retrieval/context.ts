import { CpeError, ErrorCodes } from '../errors.js';
import { normalizeTitle } from '../extract/normalize.js';
import { countTokens } from '../text/tokenizer.js';
import { compareHits, type RetrievalServices, type SearchHit, searchChunks } from './search.js';

export interface ContextOptions {
  /** token budget of the whole context (default 3000: chat; the content studio uses about 5000) */
  maxTokens?: number;
  /** hits considered (default 20) */
  limit?: number;
  collection?: string;
  /** the query is prepared like chunk texts (default 800) */
  maxEmbedChars?: number;
  /** the pipeline's embed model (see SearchOptions) */
  embedModel?: string;
  signal?: AbortSignal;
}

export interface ContextSource {
  /** N in `[Quelle N: ...]` */
  n: number;
  title: string;
  path: string;
  heading_path: string[];
  score: number;
  document_id: number;
  chunk_index: number;
  page: number | null;
}

export interface BuiltContext {
  text: string;
  sources: ContextSource[];
  /** chunks the search found: more than the sources when the budget left some out (all, when not even one fits) */
  matched: number;
  /** tokens of `text`, counted with the project's tokenizer (src/text/tokenizer.ts) */
  tokens: number;
}

export const CONTEXT_SEPARATOR = '\n\n---\n\n';

export function formatSourceBlock(n: number, hit: Pick<SearchHit, 'document_title' | 'content'>): string {
  // normalised here too: a title stored before titles were (a line break, an escape sequence from a file name) would
  // break the header an assistant reads, until its document is processed again
  return `[Quelle ${n}: ${normalizeTitle(String(hit.document_title ?? ''))}]\n${hit.content}`;
}

/**
 * Context for an LLM prompt, as the original system built it: the hits sorted by score, each as
 * `[Quelle N: <title>]` + newline + content, joined by a `---` separator, stopping before the block that would
 * pass the token budget (the best hit alone over the budget is cut to it). Returns the text and the sources it
 * cites, in the same order.
 */
export async function buildContext(
  services: RetrievalServices,
  query: string,
  options: ContextOptions = {},
): Promise<BuiltContext> {
  const maxTokens = options.maxTokens ?? 3000;
  // a budget of nothing gave an empty context and exit 0, as if nothing had matched
  if (!Number.isInteger(maxTokens) || maxTokens < 1)
    throw new CpeError(ErrorCodes.USAGE, 'max-tokens must be a positive integer');
  const hits = await searchChunks(services, query, {
    limit: options.limit ?? 20,
    collection: options.collection,
    maxEmbedChars: options.maxEmbedChars,
    embedModel: options.embedModel,
    signal: options.signal,
  });
  return assembleContext(hits, maxTokens);
}

/** The budgeted assembly on its own, for hits from anywhere. */
export function assembleContext(hits: readonly SearchHit[], maxTokens: number): BuiltContext {
  const sorted = [...hits].sort(compareHits);
  const blocks: string[] = [];
  const sources: ContextSource[] = [];
  let text = '';
  let tokens = 0;
  for (const hit of sorted) {
    const n = blocks.length + 1;
    let block = formatSourceBlock(n, hit);
    // the whole candidate is counted (not a sum of parts), so the budget holds for the text actually returned
    let candidate = blocks.length === 0 ? block : text + CONTEXT_SEPARATOR + block;
    let candidateTokens = countTokens(candidate);
    if (candidateTokens > maxTokens && blocks.length === 0) {
      // the best hit alone is over the budget: its start, cut at a word, rather than no context at all (an
      // assistant told "no matching sources" while the best match was there)
      block = candidate = trimmedBlock(n, hit, maxTokens);
      candidateTokens = countTokens(candidate);
      if (block === '') break;
    }
    if (candidateTokens > maxTokens) break;
    blocks.push(block);
    text = candidate;
    tokens = candidateTokens;
    sources.push({
      n,
      title: hit.document_title,
      path: hit.source_path,
      heading_path: hit.heading_path,
      score: hit.score,
      document_id: hit.document_id,
      chunk_index: hit.chunk_index,
      page: hit.page,
    });
  }
  return { text, sources, tokens, matched: hits.length };
}

/**
 * The source block of `hit` with as much of its content as fits `maxTokens`, cut at a word and marked "…";
 * '' when not even the heading line fits.
 */
function trimmedBlock(n: number, hit: SearchHit, maxTokens: number): string {
  const fits = (chars: number) => {
    const cut = hit.content.slice(0, chars);
    // a cut inside a word drops that word's start (the whole first word too: then only the heading line and "…")
    const atWord =
      chars < hit.content.length && /\S/.test(hit.content[chars]!) ? cut.replace(/\S*$/, '').trimEnd() : cut;
    const block = formatSourceBlock(n, { ...hit, content: atWord ? `${atWord} …` : '…' });
    return countTokens(block) <= maxTokens ? block : undefined;
  };
  if (!fits(0)) return '';
  let low = 0;
  let high = hit.content.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (fits(mid)) low = mid;
    else high = mid - 1;
  }
  return fits(low) ?? '';
}
