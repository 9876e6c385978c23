/**
 * Page furniture of a PDF: running headers and footers and page numbers, printed on page after page above and
 * below the text ("88 FREE CULTURE", "Handbuch Qualitätssicherung", "Seite 12 von 40"). Left in, they break
 * paragraphs that run over a page, and every chunk of a long document would carry them into search.
 *
 * Looked for in the first two and the last two paragraphs of each page, of at most two lines and 120 characters,
 * not larger than the body text (a chapter's heading on its first page is kept though the running header repeats
 * it). Two kinds are taken:
 * - a line with a page number: the same text on at least three pages but for a number that follows the pages:
 *   the page's own number plus an offset ("88 FREE CULTURE" on page 100, "90 FREE CULTURE" on page 102) that
 *   holds over runs of pages and changes only where pages are put in without a number (a chapter's title page)
 *   or left out of the file though counted (the blank pages before a chapter), so that "Aufgabe 1", "Aufgabe 2"
 *   at the top of pages (numbers that do not follow the pages) stay;
 * - a line without digits: the same text at the same end of at least three pages and two fifths of them; its
 *   first occurrence stays (a line repeated on every page may be content as well, and then it is there once).
 *
 * A line found so is also taken out where the gap below a header (above a footer) was no larger than between
 * lines, so that it is the first line of the page's top paragraph (the last of its bottom one); the rest of the
 * paragraph stays.
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
/** occurrences in a row whose number is the page's plus one offset: a run of page numbers */
const MIN_RUN = 3;

interface Candidate {
  page: FurniturePage;
  paragraph: FurnitureParagraph;
  text: string;
  numbers: number[];
}

/** A line found to be furniture: its end of the page, its text with the numbers as "#", its occurrences. */
interface Kind {
  end: 'top' | 'bottom';
  pattern: string;
  /** the occurrences as paragraphs of their own, in page order */
  group: Candidate[];
  /** those of them that are taken out */
  taken: Candidate[];
}

/** An occurrence of a furniture line as the first (top) or last (bottom) lines of a longer paragraph. */
interface Glued {
  page: FurniturePage;
  paragraph: FurnitureParagraph;
  /** lines it takes at the paragraph's end */
  count: number;
}

const paragraphText = (paragraph: FurnitureParagraph): string =>
  paragraph.lines
    .map((line) => line.text)
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();

/** A line's text with its numbers replaced, the same for each of its pages. */
const patternOf = (text: string): string => text.toLowerCase().replace(/\d+/g, '#');

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

/** Occurrences `from` up to (not including) `to` of a group, whose numbers are their pages' plus `offset`. */
interface Run {
  from: number;
  to: number;
  offset: number;
}

/**
 * The occurrences of a line with a number whose number is the page's printed number, or none if fewer than
 * four fifths are. A book prints the PDF's page number plus an offset that changes wherever pages are put in
 * without a number (a chapter's title page) or left out of the file though counted (the blank pages before a
 * chapter): "12 FREE CULTURE" on page 28, "18 FREE CULTURE" on page 32. So the numbers count as page numbers
 * where one offset holds over runs of at least three occurrences in a row and the printed numbers rise from
 * run to run; numbers that do not follow the pages ("Aufgabe 2" on page 1, "Aufgabe 4" on page 2, "Aufgabe 8"
 * on page 4) make no runs. An occurrence outside the runs (a page of a short chapter) is taken where its number
 * fits: rising, with an offset between those of the runs around it or, before the first run and after the
 * last, no further from that run's than the runs' offsets are from one another (with one run: the same).
 */
function pageNumbered(group: readonly Candidate[]): Candidate[] {
  const offsets = group.map((c) => new Set(c.numbers.map((n) => n - c.page.number)));
  // the runs in order, each with the offset of its first occurrence that lasts longest
  const runs: Run[] = [];
  for (let from = 0; from < group.length; ) {
    let longest: Run | undefined;
    for (const offset of offsets[from]!) {
      let to = from + 1;
      while (to < group.length && offsets[to]!.has(offset)) to++;
      if (longest === undefined || to > longest.to) longest = { from, to, offset };
    }
    // a run too short to count may still hide the start of one with another of the next occurrence's numbers
    if (longest === undefined || longest.to - longest.from < MIN_RUN) from++;
    else {
      runs.push(longest);
      from = longest.to;
    }
  }
  const first = (run: Run) => group[run.from]!.page.number + run.offset;
  const last = (run: Run) => group[run.to - 1]!.page.number + run.offset;
  // the runs whose printed numbers rise with the most occurrences: a run whose numbers go back is not the pages'
  const total = runs.map((run) => run.to - run.from);
  const before = runs.map(() => -1);
  for (let j = 0; j < runs.length; j++)
    for (let i = 0; i < j; i++) {
      const length = runs[j]!.to - runs[j]!.from;
      if (last(runs[i]!) < first(runs[j]!) && total[i]! + length > total[j]!) {
        total[j] = total[i]! + length;
        before[j] = i;
      }
    }
  let end = -1;
  for (let j = 0; j < runs.length; j++) if (end < 0 || total[j]! > total[end]!) end = j;
  const chain: Run[] = [];
  for (let j = end; j >= 0; j = before[j]!) chain.unshift(runs[j]!);
  if (chain.length === 0) return [];

  let step = 0; // the largest change of the offset from run to run
  for (let j = 1; j < chain.length; j++)
    step = Math.max(step, Math.abs(chain[j]!.offset - chain[j - 1]!.offset));

  const taken: Candidate[] = [];
  let next = 0; // the first run of the chain that does not end before the occurrence
  let printed = Number.NEGATIVE_INFINITY; // the last number taken
  for (let i = 0; i < group.length; i++) {
    while (next < chain.length && chain[next]!.to <= i) next++;
    const c = group[i]!;
    const previous = chain[next - 1];
    const following = chain[next];
    if (following !== undefined && following.from <= i) {
      taken.push(c);
      printed = c.page.number + following.offset;
      continue;
    }
    const around = [previous, following].flatMap((run) => (run === undefined ? [] : [run.offset]));
    const low = Math.min(...around) - (around.length === 1 ? step : 0);
    const high = Math.max(...around) + (around.length === 1 ? step : 0);
    const below = following === undefined ? Number.POSITIVE_INFINITY : first(following);
    const fitting = c.numbers.filter((n) => {
      const offset = n - c.page.number;
      return n > printed && n < below && offset >= low && offset <= high;
    });
    if (fitting.length === 0) continue;
    taken.push(c);
    printed = Math.min(...fitting);
  }
  if (taken.length < MIN_PAGES || taken.length < group.length * PAGE_NUMBER_SHARE) return [];
  return taken;
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
      const key = `${end}|${patternOf(text)}`;
      const numbers = (text.match(/\d+/g) ?? []).map(Number);
      const group = groups.get(key) ?? [];
      groups.set(key, group);
      // once per page (a line at both ends of a short page is one occurrence)
      if (!group.some((c) => c.page === page)) group.push({ page, paragraph, text, numbers });
    }
  }
  const furniture = new Set<FurnitureParagraph>();
  const found: string[] = [];
  const kinds: Kind[] = [];
  for (const [key, group] of groups) {
    if (group.length < MIN_PAGES) continue;
    let taken: Candidate[];
    if (key.includes('#')) {
      taken = pageNumbered(group);
      if (taken.length === 0) continue;
    } else {
      if (group.length < withText.length * MIN_SHARE) continue;
      taken = group.slice(1);
    }
    for (const c of taken) furniture.add(c.paragraph);
    found.push(taken[0]!.text);
    const end = key.startsWith('top|') ? 'top' : 'bottom';
    kinds.push({ end, pattern: key.slice(end.length + 1), group, taken });
  }
  if (furniture.size === 0) return [];
  for (const kind of kinds) {
    const glued = gluedOccurrences(kind, withText, furniture, maxSize);
    // a line without a number stays where it is first: where that is glued, its first page of its own goes too
    const first = kind.group[0]!;
    if (!kind.pattern.includes('#') && glued[0] !== undefined && glued[0].page.number < first.page.number) {
      glued.shift();
      furniture.add(first.paragraph);
    }
    for (const { paragraph, count } of glued)
      paragraph.lines.splice(kind.end === 'top' ? 0 : paragraph.lines.length - count, count);
  }
  for (const page of withText) page.paragraphs = page.paragraphs.filter((p) => !furniture.has(p));
  return found;
}

/**
 * The occurrences of a furniture line glued to the text below a header (above a footer) by the paragraph
 * grouping: on the pages where it is no paragraph of its own, the first lines of the top paragraph (the last of
 * the bottom one) left after the furniture paragraphs, if the paragraph has more lines. They do not count in
 * finding furniture: body text that happens to begin like a running header would otherwise make one. A line
 * with a number is taken where its number is the page's plus the offset of the occurrence taken before or after
 * it, so it follows the pages as they do.
 */
function gluedOccurrences(
  kind: Kind,
  pages: readonly FurniturePage[],
  removed: ReadonlySet<FurnitureParagraph>,
  maxSize: number,
): Glued[] {
  const numbered = kind.pattern.includes('#');
  const offsetsOf = (c: Candidate | undefined): number[] => c?.numbers.map((n) => n - c.page.number) ?? [];
  const glued: Glued[] = [];
  for (const page of pages) {
    if (kind.group.some((c) => c.page === page)) continue;
    const left = page.paragraphs.filter((p) => !removed.has(p));
    const paragraph = kind.end === 'top' ? left[0] : left[left.length - 1];
    if (paragraph === undefined) continue;
    for (let count = 1; count <= MAX_LINES && count < paragraph.lines.length; count++) {
      const lines = kind.end === 'top' ? paragraph.lines.slice(0, count) : paragraph.lines.slice(-count);
      if (lines.some((line) => line.size > maxSize)) break;
      const text = paragraphText({ lines });
      if (patternOf(text) !== kind.pattern) continue;
      if (numbered) {
        const before = kind.taken.findLast((c) => c.page.number < page.number);
        const after = kind.taken.find((c) => c.page.number > page.number);
        const nearby = [...offsetsOf(before), ...offsetsOf(after)];
        const numbers = text.match(/\d+/g)?.map(Number) ?? [];
        if (!numbers.some((n) => nearby.includes(n - page.number))) continue;
      }
      glued.push({ page, paragraph, count });
      break;
    }
  }
  return glued;
}
