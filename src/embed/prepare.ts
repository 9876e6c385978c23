/** The original system's default cap: mxbai-embed-large sees at most 512 tokens, about 800 German characters. */
export const DEFAULT_MAX_EMBED_CHARS = 800;

/**
 * The text that is embedded for a chunk, as the original embed.py prepared it: runs of dots (table-of-contents
 * leaders, "Kapitel 3 ........ 12") carry no meaning but use up the model's context, so they collapse to one
 * "..."; whitespace runs collapse to one space; the result is capped at maxChars.
 */
export function prepareEmbedText(text: string, maxChars: number = DEFAULT_MAX_EMBED_CHARS): string {
  const collapsed = text
    .replace(/(?:\.\s?){4,}/g, '... ')
    .replace(/[…]{2,}/g, '…')
    .replace(/\s+/g, ' ')
    .trim();
  if (collapsed.length <= maxChars) return collapsed;
  // do not cut a surrogate pair in half
  let end = maxChars;
  const last = collapsed.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return collapsed.slice(0, end);
}
