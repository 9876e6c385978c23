/**
 * Line tests of the Markdown reader that a regular expression would do in quadratic time: an ATX heading, a
 * table's delimiter row, a pandoc attribute block at the end of a heading. Each gives exactly what its expression
 * gave (the tests compare them on random lines), in one pass over the line. The expressions were
 *
 *   ATX heading          /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/
 *   delimiter row        /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/
 *   pandoc attributes    /[ \t]*\{[#.][^}]*\}$/
 *
 * and on a long run of spaces or tabs each of them tried every position of the run against the rest of it: a
 * heading line with 50,000 spaces inside took 10 s, a delimiter-like row of 60,000 characters 1 s.
 */

const isSpaceOrTab = (code: number): boolean => code === 0x20 || code === 0x09;
const HASH = 0x23;

/** 1-6 `#` after at most three spaces, followed by a space, a tab or the end of the line */
const ATX_OPENING = /^ {0,3}(#{1,6})(?=[ \t]|$)/;

/**
 * An ATX heading: its level and text (without the opening and a closing run of `#`, white space around it
 * removed), or undefined when the line is none.
 */
export function atxHeading(line: string): { level: number; text: string } | undefined {
  const opening = ATX_OPENING.exec(line);
  if (!opening) return undefined;
  const level = opening[1]!.length;
  let start = opening[0].length;
  while (start < line.length && isSpaceOrTab(line.charCodeAt(start))) start++;
  let end = line.length;
  while (end > start && isSpaceOrTab(line.charCodeAt(end - 1))) end--;
  // a closing run of # after white space ends the text, with that white space
  let hashes = end;
  while (hashes > start && line.charCodeAt(hashes - 1) === HASH) hashes--;
  if (hashes < end && hashes > start && isSpaceOrTab(line.charCodeAt(hashes - 1))) {
    end = hashes - 1;
    while (end > start && isSpaceOrTab(line.charCodeAt(end - 1))) end--;
  }
  return { level, text: line.slice(start, end) };
}

/** one cell of a delimiter row: dashes, a colon at either end for the alignment, white space around */
const DELIMITER_CELL = /^[ \t]*:?-+:?[ \t]*$/;

/** A pipe table's delimiter row (`|---|:---:|`, `--- | ---`). */
export function isTableDelimiter(line: string): boolean {
  let start = 0;
  while (start < 3 && line.charCodeAt(start) === 0x20) start++;
  // a leading pipe after at most three spaces; without one, the first cell takes the indentation
  if (line[start] === '|') start++;
  else start = 0;
  let end = line.length;
  while (end > start && isSpaceOrTab(line.charCodeAt(end - 1))) end--;
  if (end > start && line[end - 1] === '|') end--;
  return line
    .slice(start, end)
    .split('|')
    .every((cell) => DELIMITER_CELL.test(cell));
}

/** The text without a pandoc attribute block (`{#id .class}`) at its end, and the white space before it. */
export function withoutPandocAttributes(text: string): string {
  if (!text.endsWith('}')) return text;
  // the block opens after the last other `}`, at the first `{#` or `{.` there
  const from = text.lastIndexOf('}', text.length - 2) + 1;
  for (
    let open = text.indexOf('{', from);
    open >= 0 && open < text.length - 1;
    open = text.indexOf('{', open + 1)
  ) {
    const next = text[open + 1];
    if (next === '#' || next === '.') {
      let start = open;
      while (start > 0 && isSpaceOrTab(text.charCodeAt(start - 1))) start--;
      return text.slice(0, start);
    }
  }
  return text;
}
