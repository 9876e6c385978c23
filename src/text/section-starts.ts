/**
 * A section that starts inside a chunk (ChunkMetadata.sectionStarts): where its heading starts in the chunk's
 * content, its page, and its heading path. The path is stored short where it can be: a section's path is its
 * parent's path and its own heading, and its parent lies on the path of the section before it (sections come in
 * document order), so `heading` and `depth` (the path's length) rebuild it from the path before. A law's paragraph
 * deep in a code ("Buch 2 - ..." > "Abschnitt 8 - ..." > "Titel 5 - ..." > "§ 591a ...") takes a fifth of the
 * bytes so. A path that does not follow that rule is stored whole (`headingPath`).
 */
export type ChunkSectionStart = { offset: number; page: number } & (
  | { heading: string; depth: number }
  | { headingPath: string[] }
);

/** The entry for a section starting at `offset` whose path is `path`, after a section whose path is `previous`. */
export function sectionStart(
  offset: number,
  page: number,
  path: readonly string[],
  previous: readonly string[],
): ChunkSectionStart {
  const depth = path.length;
  let rebuilt = depth > 0 && depth - 1 <= previous.length;
  for (let i = 0; rebuilt && i < depth - 1; i++) rebuilt = path[i] === previous[i];
  return rebuilt
    ? { offset, heading: path[depth - 1] as string, depth, page }
    : { offset, headingPath: [...path], page };
}

/**
 * The heading path of a stored entry, after a section whose path is `previous`; undefined for an entry that names
 * none (a row edited by hand or written by another chunker).
 */
export function sectionStartPath(entry: unknown, previous: readonly string[]): string[] | undefined {
  if (typeof entry !== 'object' || entry === null) return undefined;
  const { headingPath, heading, depth } = entry as Record<string, unknown>;
  if (Array.isArray(headingPath)) return headingPath.map(String);
  if (typeof heading !== 'string' || !Number.isInteger(depth)) return undefined;
  const parents = (depth as number) - 1;
  return parents >= 0 && parents <= previous.length ? [...previous.slice(0, parents), heading] : undefined;
}
