/**
 * Page furniture of a PDF: running headers and footers and page numbers, printed on page after page above and
 * below the text ("88 FREE CULTURE", "Handbuch Qualitätssicherung", "Seite 12 von 40"). Left in, they break
 * paragraphs that run over a page, and every chunk of a long document would carry them into search.
 *
 * Looked for in the first two and the last two paragraphs of each page, of at most two lines and 120 characters,
 * not larger than the body text (a chapter's heading on its first page is kept though the running header repeats
 * it). Two kinds are taken:
 * - a line with a page number: the same text on at least three pages but for a number that is the page's own
 *   number plus one offset throughout ("88 FREE CULTURE" on page 100, "90 FREE CULTURE" on page 102), so that
 *   "Aufgabe 1", "Aufgabe 2" at the top of pages (numbers that do not follow the pages) stay;
 * - a line without digits: the same text at the same end of at least three pages and two fifths of them; its
 *   first occurrence stays (a line repeated on every page may be content as well, and then it is there once).
 */

export interface FurnitureLine {
  text: string;
  size: number;
}

export interface FurnitureParagraph {
  lines: FurnitureLine[];
}

export interface FurniturePage {
  number: number;
  paragraphs: FurnitureParagraph[];
}

/** paragraphs looked at at each end of a page */
const EDGE_PARAGRAPHS = 2;
const MAX_LINES = 2;
const MAX_CHARS = 120;
/** larger than the body text by more than this share: a heading, not furniture */
const HEADING_SIZE_RATIO = 1.15;
const MIN_PAGES = 3;
/** share of the pages with text a line without a page number must be on */
const MIN_SHARE = 0.4;
/** share of a line's occurrences whose number must follow the page numbers */
const PAGE_NUMBER_SHARE = 0.8;

interface Candidate {
  page: FurniturePage;
  paragraph: FurnitureParagraph;
  text: string;
  numbers: number[];
}

const paragraphText = (paragraph: FurnitureParagraph): string =>
  paragraph.lines
    .map((line) => line.text)
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();

/** The size most of the text is set in (the lines' sizes weighted by their length). */
function bodySize(pages: readonly FurniturePage[]): number {
  const weight = new Map<number, number>();
  for (const page of pages)
    for (const paragraph of page.paragraphs)
      for (const line of paragraph.lines) {
        const size = Math.round(line.size * 2) / 2;
        weight.set(size, (weight.get(size) ?? 0) + line.text.length);
      }
  let best = 0;
  let bestWeight = -1;
  for (const [size, w] of weight) if (w > bestWeight) [best, bestWeight] = [size, w];
  return best;
}

/**
 * Removes the furniture from the pages' paragraphs, in place. Returns the texts taken out, each kind once (its
 * first occurrence), for the document's metadata.
 */
export function removePageFurniture(pages: FurniturePage[]): string[] {
  const withText = pages.filter((page) => page.paragraphs.length > 0);
  if (withText.length < MIN_PAGES) return [];
  const maxSize = bodySize(withText) * HEADING_SIZE_RATIO;
  // by end of the page and text with its numbers replaced
  const groups = new Map<string, Candidate[]>();
  for (const page of withText) {
    const count = page.paragraphs.length;
    if (count < 2) continue; // a page of one paragraph: that is its text
    const edges: Array<['top' | 'bottom', number]> = [];
    for (let i = 0; i < Math.min(EDGE_PARAGRAPHS, count - 1); i++) edges.push(['top', i]);
    for (let i = Math.max(count - EDGE_PARAGRAPHS, 1); i < count; i++) edges.push(['bottom', i]);
    for (const [end, index] of edges) {
      const paragraph = page.paragraphs[index]!;
      if (paragraph.lines.length > MAX_LINES) continue;
      if (paragraph.lines.some((line) => line.size > maxSize)) continue;
      const text = paragraphText(paragraph);
      if (text === '' || text.length > MAX_CHARS) continue;
      const key = `${end}|${text.toLowerCase().replace(/\d+/g, '#')}`;
      const numbers = (text.match(/\d+/g) ?? []).map(Number);
      const group = groups.get(key) ?? [];
      groups.set(key, group);
      // once per page (a line at both ends of a short page is one occurrence)
      if (!group.some((c) => c.page === page)) group.push({ page, paragraph, text, numbers });
    }
  }
  const furniture = new Set<FurnitureParagraph>();
  const found: string[] = [];
  for (const [key, group] of groups) {
    if (group.length < MIN_PAGES) continue;
    let taken: Candidate[];
    if (key.includes('#')) {
      // the offset between a number on the line and the page's number that most occurrences share
      const offsets = new Map<number, number>();
      for (const c of group)
        for (const offset of new Set(c.numbers.map((n) => n - c.page.number)))
          offsets.set(offset, (offsets.get(offset) ?? 0) + 1);
      let best: number | undefined;
      let bestCount = 0;
      for (const [offset, n] of offsets) if (n > bestCount) [best, bestCount] = [offset, n];
      if (best === undefined || bestCount < MIN_PAGES || bestCount < group.length * PAGE_NUMBER_SHARE)
        continue;
      taken = group.filter((c) => c.numbers.some((n) => n - c.page.number === best));
    } else {
      if (group.length < withText.length * MIN_SHARE) continue;
      taken = group.slice(1);
    }
    for (const c of taken) furniture.add(c.paragraph);
    found.push(taken[0]!.text);
  }
  if (furniture.size === 0) return [];
  for (const page of withText) page.paragraphs = page.paragraphs.filter((p) => !furniture.has(p));
  return found;
}
