/**
 * Line tests of the Markdown reader that a regular expression would do in quadratic time, or not at all on a long
 * line: an ATX heading, a table's delimiter row, a pandoc attribute block at the end of a heading, a thematic break,
 * a pandoc table's dash row. Each gives exactly what its expression gave (the tests compare them on random lines),
 * in one pass over the line. The expressions were
 *
 *   ATX heading          /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/
 *   delimiter row        /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/
 *   pandoc attributes    /[ \t]*\{[#.][^}]*\}$/
 *   thematic break       /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/
 *   dash row             /^ {0,3}-{3,}(?:[ \t]+-{2,})*[ \t]*$/
 *   column dashes        /^ {0,3}-{2,}(?:[ \t]+-{2,})+[ \t]*$/
 *
 * On a long run of spaces or tabs each of the first three tried every position of the run against the rest of it:
 * a heading line with 50,000 spaces inside took 10 s, a delimiter-like row of 60,000 characters 1 s. The last
 * three repeat a group, for which V8 keeps a backtrack entry per repetition: past about two million of them it
 * throws "Maximum call stack size exceeded", which a line of 2 MB of dashes (a thematic break) reached.
 */

const isSpaceOrTab = (code: number): boolean => code === 0x20 || code === 0x09;
const HASH = 0x23;
const SPACE = 0x20;
const DASH = 0x2d;
const STAR = 0x2a;
const UNDERSCORE = 0x5f;

/** Index after at most three spaces at the start of the line. */
function afterIndent(line: string): number {
  let at = 0;
  while (at < 3 && line.charCodeAt(at) === SPACE) at++;
  return at;
}

/**
 * A thematic break: three or more of the same mark (`-`, `*` or `_`), spaces and tabs between and after them, at
 * most three spaces before.
 */
export function isThematicBreak(line: string): boolean {
  let at = afterIndent(line);
  const mark = line.charCodeAt(at);
  if (mark !== DASH && mark !== STAR && mark !== UNDERSCORE) return false;
  let marks = 0;
  for (; at < line.length; at++) {
    const code = line.charCodeAt(at);
    if (code === mark) marks++;
    else if (!isSpaceOrTab(code)) return false;
  }
  return marks >= 3;
}

/**
 * The dash groups of a line made of them: at most three spaces, groups of two dashes or more separated by spaces
 * or tabs, spaces or tabs after. The number of groups, 0 when the line is none; `first` is the length a first group
 * must have at least.
 */
function dashGroups(line: string, first: number): number {
  let groups = 0;
  let at = afterIndent(line);
  while (at < line.length) {
    const start = at;
    while (line.charCodeAt(at) === DASH) at++;
    const dashes = at - start;
    if (dashes < (groups === 0 ? first : 2)) return 0;
    groups++;
    const gap = at;
    while (isSpaceOrTab(line.charCodeAt(at))) at++;
    if (at === gap && at < line.length) return 0; // a dash group runs into something else
  }
  return groups;
}

/** A pandoc table's border: a row of three dashes or more, or of dash groups per column ("----- -------"). */
export const isDashRow = (line: string): boolean => dashGroups(line, 3) > 0;

/** A pandoc simple table's header underline: two dash groups or more ("-----  -------"). */
export const isColumnDashes = (line: string): boolean => dashGroups(line, 2) > 1;

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
