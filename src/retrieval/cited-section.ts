import { localHashFeatureMatcher } from '../embed/local-hash.js';
import { sectionStartPath } from '../text/section-starts.js';
import { parseJsonColumn } from '../util/json.js';

/** The section a hit is cited with: its heading path, its page, and where it starts in the chunk's content. */
export interface CitedSection {
  headingPath: string[];
  page: number | null;
  /** offset in the chunk's content (0: the section the chunk starts in) */
  offset: number;
}

/** The part of a chunk that one section holds. */
interface SectionPart extends CitedSection {
  end: number;
}

/**
 * Which of the sections a chunk reaches into a hit cites: the one whose part of the chunk shares the most with
 * the query. Short sections share a chunk (a law's paragraphs: most chunks of a law reach over two or more), and
 * the chunk's heading_path names only the one it starts in, often a paragraph's last sentence before the one the
 * query asks about. Each part is compared with the query by the local embedder's features (words, stems, word
 * pairs, character n-grams: what it shares in words, whichever embedder found the chunk), the first part with its
 * heading in front (the heading lies before the chunk). A part that shares nothing loses to one that does; when
 * none does (a dense model found the chunk by meaning alone), the part holding the most of the chunk's text.
 */
export function citedSectionOf(
  query: string,
): (content: string, headingPath: string[], page: number | null, metadata: unknown) => CitedSection {
  let matcher: ReturnType<typeof localHashFeatureMatcher> | undefined;
  return (content, headingPath, page, metadata) => {
    const parts = sectionParts(content, headingPath, page, metadata);
    if (parts.length === 1) return { headingPath, page, offset: 0 };
    matcher ??= localHashFeatureMatcher(query);
    let best = parts[0] as SectionPart;
    let bestScore = -1;
    for (const [k, part] of parts.entries()) {
      const text = content.slice(part.offset, part.end);
      const score = matcher.score(k === 0 ? `${headingPath.at(-1) ?? ''}\n${text}` : text);
      const longer = part.end - part.offset > best.end - best.offset;
      if (score > bestScore || (score === bestScore && score === 0 && longer)) {
        best = part;
        bestScore = score;
      }
    }
    return { headingPath: best.headingPath, page: best.page, offset: best.offset };
  };
}

/** The chunk's parts by section, from its metadata's sectionStarts (one part when it has none). */
function sectionParts(
  content: string,
  headingPath: string[],
  page: number | null,
  metadata: unknown,
): SectionPart[] {
  const starts = parseJsonColumn<{ sectionStarts?: unknown }>(metadata, {}).sectionStarts;
  const parts: SectionPart[] = [{ headingPath, page, offset: 0, end: content.length }];
  if (!Array.isArray(starts)) return parts;
  for (const start of starts as Array<{ offset?: unknown; page?: unknown }>) {
    const previous = parts.at(-1) as SectionPart;
    const path = sectionStartPath(start, previous.headingPath);
    const offset = start?.offset;
    // a row edited by hand or written by another chunker: no path, or a start not inside the chunk after the last
    if (!path || !Number.isInteger(offset)) continue;
    if ((offset as number) <= previous.offset || (offset as number) >= content.length) continue;
    previous.end = offset as number;
    parts.push({
      headingPath: path,
      page: Number.isInteger(start.page) ? (start.page as number) : page,
      offset: offset as number,
      end: content.length,
    });
  }
  return parts;
}
