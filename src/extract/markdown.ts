/**
 * Markdown: a line-based block reader (CommonMark/GFM/pandoc block syntax), not a renderer. Each block keeps
 * its Markdown text (emphasis, links, inline HTML stay as written) so nothing is lost or interpreted; only
 * pure markup is dropped: the front matter (parsed into metadata), thematic breaks, HTML comments (not shown;
 * a heading commented out is no section), and the fence lines of pandoc/Quarto divs (`::: {.callout-note}`),
 * whose content is kept (and a callout's `title="..."`, which is shown, as a paragraph).
 *
 * Decisions: headings are stored without the `#` marks, without a trailing pandoc attribute block
 * (`{#sec-id}`) and without backslash escapes (`Nutzer\*innen` is the heading "Nutzer*innen": heading paths
 * and titles are read by people and matched by search; paragraphs keep their escapes); list items keep their marker ("1.", "-") because numbering carries meaning (law text);
 * code blocks keep fences and indentation verbatim; one table is one block with its raw rows; blockquotes
 * are paragraphs that keep their `>`; a further paragraph inside a list item becomes a paragraph block.
 * A `---` or `===` line under a paragraph makes a Setext heading only when the paragraph reads like a heading
 * (at most 120 characters, no closing full stop): in converted documents such a line under a long sentence is
 * a separator, not a heading. Pandoc simple and multiline tables (dash rows, columns aligned by spaces) are
 * one table block, caption line included.
 */
import { load } from 'js-yaml';
import { DocumentBuilder } from './document-builder.js';
import {
  atxHeading,
  isColumnDashes,
  isDashRow,
  isTableDelimiter,
  isThematicBreak,
  withoutPandocAttributes,
} from './markdown-lines.js';
import { joinSoftHyphenBreaks, normalizeText, normalizeTitle } from './normalize.js';
import { blankTextOf, byteOrderMarkOf, decodeText, splitPages } from './txt.js';
import type { ExtractedDocument, ExtractOptions } from './types.js';

const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
const DIV_FENCE = /^ {0,3}:{3,}/;
/** the title attribute of a pandoc/Quarto div fence */
const DIV_TITLE = /\btitle="([^"]*)"/;
const SETEXT_1 = /^ {0,3}=+[ \t]*$/;
const SETEXT_2 = /^ {0,3}-+[ \t]*$/;
const LIST_ITEM = /^([ \t]*)([-+*]|\d{1,9}[.)])([ \t]+|$)/;
const GRID_TABLE = /^ {0,3}\+(?=[-=:+]*[-=])[-=:+]+\+[ \t]*$/;
const BLOCKQUOTE = /^ {0,3}>/;
/** an HTML comment opening a line (CommonMark HTML block, type 2): it runs to the line holding `-->` */
const HTML_COMMENT = /^ {0,3}<!--/;
/** a pandoc table caption right below the table: ": Caption" or "Table: Caption" */
const TABLE_CAPTION = /^ {0,3}(?::|Table:)[ \t]/;
/** text with a gap of two or more spaces: columns aligned by spaces */
const COLUMN_GAP = /\S {2,}\S/;
/** a Setext underline makes a heading only of a paragraph this short (and not ending with a full stop) */
const SETEXT_MAX_CHARS = 120;
/** how far a pandoc table may reach down to its closing border */
const PANDOC_TABLE_MAX_LINES = 500;

/** CommonMark backslash escapes of ASCII punctuation ("\*", "\_", "\#"), resolved. */
const unescapeMarkdown = (text: string): string => text.replace(/\\([!-/:-@[-`{-~])/g, '$1');

const isBlank = (line: string): boolean => line.trim() === '';

/** Indentation width, a tab counting to the next multiple of four. */
function indentOf(line: string): number {
  let width = 0;
  for (const char of line) {
    if (char === ' ') width++;
    else if (char === '\t') width += 4 - (width % 4);
    else break;
  }
  return width;
}

/**
 * A line that ends a pipe table without a blank line before it: it starts a block of another kind (a row starts
 * with a pipe, or has one: a list item or a thematic break without one is no row).
 */
const startsOtherBlock = (line: string): boolean =>
  atxHeading(line) !== undefined ||
  FENCE.test(line) ||
  BLOCKQUOTE.test(line) ||
  HTML_COMMENT.test(line) ||
  (!line.includes('|') && (LIST_ITEM.test(line) || isThematicBreak(line)));

/** The cells of a pipe table row: split at pipes that are not escaped, without the pipes at its ends. */
function pipeCells(row: string): number {
  let text = row.trim();
  if (text.startsWith('|')) text = text.slice(1);
  if (text.endsWith('|') && !text.endsWith('\\|')) text = text.slice(0, -1);
  let cells = 1;
  for (let at = text.indexOf('|'); at >= 0; at = text.indexOf('|', at + 1))
    if (text[at - 1] !== '\\') cells++;
  return cells;
}

/**
 * A GFM pipe table's header at line i: a row with a pipe over a delimiter row of as many cells ("a | b" over
 * "---|---"; a single column needs its pipes: "| a |" over "---"). "Kapitel 3 | Übersicht" over "---" is a
 * Setext heading, as in GFM.
 */
function isPipeTableHeader(lines: string[], i: number): boolean {
  const line = lines[i]!;
  const next = lines[i + 1];
  if (!line.includes('|') || !next?.includes('-') || !isTableDelimiter(next)) return false;
  const cells = pipeCells(line);
  return cells === pipeCells(next) && (cells > 1 || line.trim().startsWith('|'));
}

function isTableStart(lines: string[], i: number): boolean {
  const line = lines[i]!;
  if (GRID_TABLE.test(line)) return true;
  if (isPipeTableHeader(lines, i)) return true;
  const next = lines[i + 1];
  if (line.includes('|') && next !== undefined && isTableDelimiter(next)) return false; // cells do not match
  // pandoc pipe tables without a delimiter line right below (multi-line cells): two rows starting with |
  return line.trimStart().startsWith('|') && next?.trimStart().startsWith('|') === true;
}

/**
 * Pandoc tables (see endAt) on one page's lines. A table that opens with a dash row is sought by looking ahead to
 * the dash row that closes it, up to PANDOC_TABLE_MAX_LINES lines; what the look-ahead has read is kept, so that the
 * next dash row in the same stretch continues it instead of reading those lines again: each line is read once. A
 * page of `---` lines, each opening a look-ahead of 500 lines, took 33 s per 2 MB with a fresh look-ahead each.
 */
class PandocTables {
  /** the dash row the kept look-ahead started from; it has read the lines after it up to `to` (exclusive) */
  private from = -1;
  private to = 0;
  /** the first line read that ends every table opening before it: a heading or a fence, or a closing dash row */
  private stop: { at: number; closes: boolean } | undefined;
  /** the last line read of each kind: a dash-group row (not closing), text with wide gaps, text at the margin */
  private lastColumnDashes = -1;
  private lastGapRow = -1;
  private lastPlainRow = -1;

  constructor(private readonly lines: readonly string[]) {}

  /**
   * Index after the last line of a pandoc table that starts at line i, or undefined when none starts there.
   * Multiline and headerless tables open with a dash row directly followed by text and close with a dash row
   * followed by a blank line (or the end, or a caption); simple tables are a header line over column dashes and
   * run to the next blank line. Columns must be visible (a dash-group underline or text with wide gaps), so two
   * thematic breaks around a line of text stay what they are. Lines are asked for in order (i only grows).
   */
  endAt(i: number): number | undefined {
    const lines = this.lines;
    const line = lines[i]!;
    const next = lines[i + 1];
    if (next === undefined || isBlank(next)) return undefined;
    if (!isDashRow(line)) {
      if (!isColumnDashes(next) || atxHeading(line) || LIST_ITEM.test(line)) return undefined;
      return this.captionEnd(i + 2);
    }
    const stop = this.lookAhead(i);
    if (!stop?.closes) return undefined;
    // columns are seen in dash groups, or in rows with wide gaps: then every row that starts at the margin has a
    // gap (a sentence with two spaces after a colon, between "---" and a Setext heading, is no table)
    const dashColumns = isColumnDashes(line) || this.lastColumnDashes > i;
    if (!dashColumns && (this.lastGapRow < i || this.lastPlainRow > i)) return undefined;
    return this.captionEnd(stop.at + 1);
  }

  /** Index of the next blank line from `from` on (or the end): a simple table's rows, or a table's caption lines. */
  private captionEnd(from: number): number {
    let end = from;
    while (end < this.lines.length && !isBlank(this.lines[end]!)) end++;
    return end;
  }

  /**
   * The first line within PANDOC_TABLE_MAX_LINES after the dash row at i that ends a table opening there, or
   * undefined when none does; the look-ahead kept from an earlier dash row is continued when i lies in it.
   */
  private lookAhead(i: number): { at: number; closes: boolean } | undefined {
    if (i <= this.from || i >= (this.stop?.at ?? this.to)) {
      this.from = i;
      this.to = i + 1;
      this.stop = undefined;
      this.lastColumnDashes = this.lastGapRow = this.lastPlainRow = -1;
    }
    const limit = Math.min(this.lines.length, i + PANDOC_TABLE_MAX_LINES);
    while (this.stop === undefined && this.to < limit) this.read(this.to++);
    return this.stop !== undefined && this.stop.at < limit ? this.stop : undefined;
  }

  /** Reads line j of the look-ahead. */
  private read(j: number): void {
    const row = this.lines[j]!;
    if (atxHeading(row) || FENCE.test(row)) {
      this.stop = { at: j, closes: false };
    } else if (isDashRow(row) || isColumnDashes(row)) {
      const after = this.lines[j + 1];
      if (after === undefined || isBlank(after) || TABLE_CAPTION.test(after))
        this.stop = { at: j, closes: true };
      else if (isColumnDashes(row)) this.lastColumnDashes = j;
    } else if (COLUMN_GAP.test(row.trim())) {
      this.lastGapRow = j;
    } else if (!isBlank(row) && indentOf(row) === 0) {
      this.lastPlainRow = j;
    }
  }
}

interface FrontMatter {
  data?: unknown;
  raw: string;
  /** why the front matter is not read: "not valid YAML (…)", "not read as TOML (…)", … */
  problem?: string;
  /** the document's title from the front matter, as written (see frontMatterTitle) */
  title?: string;
  /** number of lines the front matter takes, fences included */
  lines: number;
}

/** a YAML key at the start of a line: what front matter is made of */
const YAML_KEY = /^[A-Za-z_][\w.-]*[ \t]*:/;
/** a line YAML front matter is made of: a key, a comment, a list item, or an indented continuation */
const YAML_LINE = /^(?:[A-Za-z_][\w.-]*[ \t]*:|[ \t]*#|[ \t]*-(?:[ \t]|$)|[ \t]+\S)/;

/** Lines that read as YAML keys throughout (a sentence or a Markdown heading among them is page text). */
const looksLikeYaml = (lines: readonly string[]): boolean => {
  const shown = lines.filter((l) => l.trim() !== '');
  return YAML_KEY.test(shown[0] ?? '') && shown.every((l) => YAML_LINE.test(l));
};

/**
 * The front matter at the top of a page: YAML between `---` lines that is a mapping of keys. Anything else between
 * two `---` lines (a heading, a sentence: YAML would read them as a comment and a string) is text between thematic
 * breaks and stays text; YAML that does not parse is front matter only when it starts like keys (then it is kept,
 * raw, in the metadata, with a warning).
 */
function readFrontMatter(lines: string[]): FrontMatter | undefined {
  if (lines[0]?.trimEnd() === '+++') return readTomlFrontMatter(lines);
  if (lines[0]?.trimEnd() !== '---') return undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!.trimEnd();
    if (line === '---' || line === '...') {
      const fields = lines.slice(1, i);
      const raw = fields.join('\n');
      if (raw.trim() === '') return { data: {}, raw, lines: i + 1 };
      try {
        // aliases capped, but that alone does not keep them from expanding (see expandsWithin)
        const data = load(raw, { maxAliases: 100, maxDepth: 50 });
        if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
        const budget = 2 * raw.length + FRONT_MATTER_GROWTH;
        // an alias is written with a `*`: without one, no value is reached twice
        if (raw.includes('*') && !expandsWithin(data, budget)) {
          const problem = `too large with its aliases expanded (more than ${budget} values and characters)`;
          return { raw, problem, lines: i + 1 };
        }
        const title = frontMatterTitle(data as Record<string, unknown>, (key, value) =>
          yamlNumberAsWritten(fields, key, value),
        );
        // dates and other YAML types become their JSON form: metadata must survive JSON round trips
        return { data: JSON.parse(JSON.stringify(data)), raw, lines: i + 1, title };
      } catch (error) {
        // "---", "Stand: März 2024", a blank line, the page's text and a thematic break: no front matter
        if (!looksLikeYaml(fields)) return undefined;
        const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
        return { raw, problem: `not valid YAML (${reason})`, lines: i + 1 };
      }
    }
  }
  return undefined; // no closing fence: a thematic break, not front matter
}

/**
 * How much larger than twice its text the data of YAML front matter may be, its aliases expanded (expandsWithin
 * counts each value as one, a string or a key as its length): room for a few anchors used more than once. Data
 * without aliases, counted so, is about as large as its text.
 */
const FRONT_MATTER_GROWTH = 100_000;

/**
 * Whether YAML data stays within `budget` once its aliases are expanded, as JSON.stringify expands them. js-yaml
 * keeps an alias as a reference to the anchor's value, which costs nothing, but JSON writes it out each time:
 * twelve levels of eight aliases (96, under maxAliases) are 8^12 values, and stringifying them hung the process
 * for good. Each value counts one, a string or a key its length, every time it is reached; the walk stops at the
 * budget, so it takes no longer than that (a cycle, which js-yaml allows, included) and needs no stack.
 */
function expandsWithin(data: unknown, budget: number): boolean {
  const pending: unknown[] = [data];
  let size = 1;
  while (pending.length > 0 && size <= budget) {
    const value = pending.pop();
    if (typeof value === 'string') {
      size += value.length;
    } else if (Array.isArray(value)) {
      size += value.length;
      if (size <= budget) for (const item of value) pending.push(item);
    } else if (value !== null && typeof value === 'object') {
      // keys, not entries: a mapping of many keys is a dictionary, whose entries take three times as long
      for (const key of Object.keys(value)) {
        size += 1 + key.length;
        pending.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return size <= budget;
}

/** `key = value` in TOML: a bare or quoted key, then the value (with white space and a comment after it) */
const TOML_PAIR = /^\s*([A-Za-z0-9_-]+|"[^"]*")\s*=\s*(\S.*)$/;

/**
 * TOML front matter (Hugo, Zola: between `+++` lines). Its top-level pairs of strings, numbers, booleans and
 * arrays of those are read (title, date, tags: what a document's metadata needs); anything else (tables, inline
 * tables, multi-line strings) leaves the whole block raw, with the error saying so. No closing `+++`: no front matter.
 */
function readTomlFrontMatter(lines: string[]): FrontMatter | undefined {
  const end = lines.findIndex((line, i) => i > 0 && line.trimEnd() === '+++');
  if (end < 0) return undefined;
  const raw = lines.slice(1, end).join('\n');
  const data: Record<string, unknown> = {};
  const written = new Map<string, string>();
  for (const line of lines.slice(1, end)) {
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    const pair = TOML_PAIR.exec(line);
    const text = pair ? withoutTomlComment(pair[2]!) : '';
    const value = pair ? tomlValue(text) : undefined;
    if (!pair || value === undefined) {
      const problem = `not read as TOML (TOML beyond simple pairs: ${line.trim().slice(0, 60)})`;
      return { raw, problem, lines: end + 1 };
    }
    const key = pair[1]!.replace(/^"|"$/g, '');
    data[key] = value;
    written.set(key, text);
  }
  const title = frontMatterTitle(data, (key) => written.get(key));
  return { data, raw, lines: end + 1, title };
}

/**
 * Positions in a TOML value outside its strings ("…" with escapes, '…' without), one scan: `#` there opens a
 * comment, `,` there separates an array's items.
 */
function unquoted(text: string, at: (index: number, char: string) => boolean): void {
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quote) {
      if (char === '\\' && quote === '"') i++;
      else if (char === quote) quote = '';
    } else if (char === '"' || char === "'") {
      quote = char;
    } else if (at(i, char)) {
      return;
    }
  }
}

/** A TOML value without the comment after it and the white space around. */
function withoutTomlComment(text: string): string {
  let end = text.length;
  unquoted(text, (i, char) => {
    if (char !== '#') return false;
    end = i;
    return true;
  });
  return text.slice(0, end).trim();
}

/** An array's items, split at the commas outside its strings. */
function tomlItems(text: string): string[] {
  const items: string[] = [];
  let from = 0;
  unquoted(text, (i, char) => {
    if (char === ',') {
      items.push(text.slice(from, i).trim());
      from = i + 1;
    }
    return false;
  });
  items.push(text.slice(from).trim());
  return items.filter((item) => item !== '');
}

/**
 * A TOML value of the simple kinds (see readTomlFrontMatter), or undefined. An array holds scalars only: read
 * as a value again, each level of `[[[…]]]` took a pass over the rest, and its depth overflowed the stack.
 */
function tomlValue(value: string): unknown {
  if (value.startsWith('[') && value.endsWith(']')) {
    const items = value.slice(1, -1).trim();
    if (items === '') return [];
    const values = tomlItems(items).map(tomlScalar);
    return values.every((v) => v !== undefined) ? values : undefined;
  }
  return tomlScalar(value);
}

/**
 * a TOML number: digits, a fraction, underscores among the digits; that each stands between two digits is a
 * second test (`\d+(?:_\d+)*` kept a backtrack entry per group and threw on a few million of them)
 */
const TOML_NUMBER = /^[+-]?\d[\d_]*(?:\.\d[\d_]*)?$/;

/** A TOML string, number, boolean or date, or undefined. */
function tomlScalar(value: string): unknown {
  if (/^"(?:[^"\\]|\\.)*"$/.test(value)) {
    try {
      return JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  if (/^'[^']*'$/.test(value)) return value.slice(1, -1);
  if (value === 'true' || value === 'false') return value === 'true';
  if (TOML_NUMBER.test(value) && !/_(?!\d)/.test(value)) return Number(value.split('_').join(''));
  if (/^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:\d{2})?)?$/.test(value)) return value;
  return undefined;
}

export function extractMarkdown(
  bytes: Uint8Array,
  _file: string,
  options?: ExtractOptions,
): Promise<ExtractedDocument> {
  const { text, encoding, warning } = decodeText(bytes);
  const builder = new DocumentBuilder('md');
  const metadata: Record<string, unknown> = { encoding };
  if (warning) builder.warnings.push(warning);
  const pages = splitPages(text, options?.maxPages, builder.warnings);
  let firstHeading: string | undefined;
  let titleFromFrontMatter: string | undefined;
  pages.forEach((page, index) => {
    let lines = page.split('\n');
    if (index === 0) {
      const frontMatter = readFrontMatter(lines);
      if (frontMatter) {
        titleFromFrontMatter = frontMatter.title;
        lines = lines.slice(frontMatter.lines);
        if (frontMatter.problem !== undefined) {
          builder.warnings.push(
            `front matter is ${frontMatter.problem}; kept as raw text in the metadata (frontMatterRaw)`,
          );
          metadata.frontMatterRaw = frontMatter.raw;
        } else {
          metadata.frontMatter = frontMatter.data;
        }
      }
    }
    builder.startPage(index + 1);
    const heading = readBlocks(lines, builder);
    firstHeading ??= heading;
  });
  const title = titleFromFrontMatter ?? firstHeading;
  if (title !== undefined) metadata.title = title;
  metadata.logicalPages = pages.length;
  return Promise.resolve(builder.build(metadata));
}

/**
 * What a Markdown file that extracts to no text holds instead (for noTextReason): a byte order mark, front matter,
 * markup that is not shown (an HTML comment, a rule, an empty heading), white space.
 */
export function markdownHeldInsteadOfText(bytes: Uint8Array, options?: ExtractOptions): string[] {
  const { text, encoding } = decodeText(bytes);
  const pages = splitPages(text, options?.maxPages);
  const frontMatterLines = readFrontMatter(pages[0]!.split('\n'))?.lines ?? 0;
  const body = pages
    .map((page, index) => (index === 0 ? page.split('\n').slice(frontMatterLines).join('\n') : page))
    .join('\n');
  const held = byteOrderMarkOf(encoding);
  if (frontMatterLines > 0) held.push('front matter');
  // text that normalising leaves is markup the reader drops (a comment, a rule, an empty heading)
  if (normalizeText(body).trim() !== '') held.push('markup that is not shown, such as comments');
  else if (frontMatterLines === 0) held.push(...blankTextOf(body));
  return held;
}

/**
 * The title in front matter (its first `title` key in any case that has one), normalised as a heading is. A
 * number is a title too (`title: 1984`, `title: 3.0`), as written: `writtenAs` gives its text in the source
 * (YAML reads "3.0" as 3), else it is the number's own form. A boolean is none (`title: false` is a switch some
 * site generators know, no document is named "true"), nor is an empty value, a list or a mapping. Dates need
 * nothing: YAML 1.2 and readTomlFrontMatter keep them as the strings they are written as.
 */
function frontMatterTitle(
  data: Record<string, unknown>,
  writtenAs: (key: string, value: number) => string | undefined,
): string | undefined {
  // keys, not entries: front matter of many keys is a dictionary, whose entries take three times as long
  for (const key of Object.keys(data)) {
    if (key.toLowerCase() !== 'title') continue;
    const value = data[key];
    const title =
      typeof value === 'string'
        ? normalizeTitle(value)
        : typeof value === 'number' && Number.isFinite(value)
          ? normalizeTitle(writtenAs(key, value) ?? String(value))
          : '';
    if (title !== '') return title;
  }
  return undefined;
}

/** a top-level YAML value that is a plain number literal ("1984", "3.0", "-1e3", "0x1F"), a comment after it */
const YAML_NUMBER_FIELD = /^[ \t]*:[ \t]+([-+.\w]+)(?:[ \t]+#.*)?[ \t]*$/;

/**
 * The text a YAML number `value` under the top-level `key` is written as in the front matter's lines, when it is
 * a plain literal on the key's line that reads as that very number; undefined otherwise (an anchor, a tag, a
 * flow mapping: then the number's own form is used).
 */
function yamlNumberAsWritten(lines: readonly string[], key: string, value: number): string | undefined {
  for (const line of lines) {
    if (!line.startsWith(key)) continue;
    const literal = YAML_NUMBER_FIELD.exec(line.slice(key.length))?.[1];
    if (literal === undefined) continue;
    try {
      if (Object.is(load(literal), value)) return literal;
    } catch {
      // not a YAML scalar on its own: not the number's text
    }
  }
  return undefined;
}

/**
 * a soft hyphen at the end of a quote's line whose word the next quoted line (after its `>` marks) goes on with;
 * the marks as one class (`(?:>[ \t]*)+` kept a backtrack entry per mark and threw on millions of them)
 */
const QUOTED_SOFT_HYPHEN_BREAK = /([\p{L}\p{M}])\u00AD[ \t]*\n[ \t]*>[> \t]*(?=\p{L})/gu;

/**
 * A quote's lines with a word a soft hyphen breaks at a line end joined, as normalizeText joins it in other text:
 * there the next line starts with its `>`, which goes with the line break ("> Kündigungs\u00AD" over "> schutz").
 */
const joinQuotedSoftHyphenBreaks = (quote: string): string =>
  quote.includes('\u00AD') ? quote.replace(QUOTED_SOFT_HYPHEN_BREAK, '$1') : quote;

/**
 * Whether a paragraph's lines may make a Setext heading by their length, counted only as far as the limit: each line
 * keeps at least one character in the heading, and all of its text but a soft hyphen at its end. An underline that
 * makes no heading becomes a line of the paragraph; joining all its lines for each of thousands of `===` lines took
 * quadratic time.
 */
function mayBeSetextHeading(paragraph: readonly string[]): boolean {
  let length = 0;
  for (const line of paragraph) {
    length += Math.max(1, line.trim().length - 1);
    if (length > SETEXT_MAX_CHARS) return false;
  }
  return true;
}

/** Reads the blocks of one logical page into the builder; returns the text of the first level-1 heading. */
function readBlocks(lines: string[], builder: DocumentBuilder): string | undefined {
  return new BlockReader(lines, builder).read();
}

/** An open list item: its lines, nesting level and the indent of its text. */
interface OpenItem {
  lines: string[];
  level: number;
  contentIndent: number;
}

/**
 * The state of reading one page's lines, one method per kind of block. A class rather than one function with
 * closures: V8 compiles each method on its own, as it gets hot (the whole reader as one function took TurboFan
 * 40-50 ms per compile, three compiles per pass over the shared corpus), and the state is in fields instead
 * of a closure context.
 */
class BlockReader {
  private firstH1: string | undefined;
  private paragraph: string[] = [];
  private quote: string[] = [];
  private item: OpenItem | undefined;
  /** marker indents of the open lists, outermost first; empty = not in a list */
  private listIndents: number[] = [];
  private blankBefore = true;
  private i = 0;
  private readonly pandocTables: PandocTables;

  constructor(
    private readonly lines: string[],
    private readonly builder: DocumentBuilder,
  ) {
    this.pandocTables = new PandocTables(lines);
  }

  read(): string | undefined {
    const lines = this.lines;
    while (this.i < lines.length) {
      const line = lines[this.i]!;
      if (isBlank(line)) {
        this.flushParagraph();
        this.flushQuote();
        this.blankBefore = true;
        this.i++;
      } else {
        this.i = this.block(line);
      }
    }
    this.flushAll();
    return this.firstH1;
  }

  private flushParagraph(): void {
    if (this.paragraph.length > 0) this.builder.add('paragraph', this.paragraph.join('\n'));
    this.paragraph = [];
  }

  private flushQuote(): void {
    if (this.quote.length > 0)
      this.builder.add('paragraph', joinQuotedSoftHyphenBreaks(this.quote.join('\n')));
    this.quote = [];
  }

  private flushItem(): void {
    if (this.item) this.builder.add('list_item', this.item.lines.join('\n'), this.item.level);
    this.item = undefined;
  }

  private flushAll(): void {
    this.flushParagraph();
    this.flushQuote();
    this.flushItem();
  }

  private heading(raw: string, level: number): void {
    // normalised here, not only when added: the first one is the document's title too
    const value = normalizeText(unescapeMarkdown(withoutPandocAttributes(raw).trim())).trim();
    if (value === '') return;
    this.builder.add('heading', value, level);
    if (level === 1) this.firstH1 ??= value;
  }

  /** The non-blank line at this.i and what follows it; returns the index of the next line to read. */
  private block(line: string): number {
    const i = this.i;
    const indent = indentOf(line);
    const wasBlank = this.blankBefore;
    this.blankBefore = false;

    // a list ends at an unindented line after a blank line that is not a further item
    if (this.listIndents.length > 0 && wasBlank && indent === 0 && !LIST_ITEM.test(line)) {
      this.flushItem();
      this.listIndents = [];
    }
    // after a blank line, text indented to the item's content is a further paragraph of that item
    if (this.item && wasBlank && !LIST_ITEM.test(line) && indent >= Math.min(this.item.contentIndent, 4)) {
      this.flushItem();
    }

    // inside a list a fence is indented to its item's text (4 spaces and more in a nested item): measured from there
    const inList = this.listIndents.length > 0 && indent >= 4;
    const fence = FENCE.exec(inList ? line.trimStart() : line);
    if (fence && !(fence[2]!.startsWith('`') && fence[3]!.includes('`')))
      return this.fencedCode(fence[2]!, inList ? indent : 0);
    if (DIV_FENCE.test(line)) {
      this.flushAll();
      // a callout's title is shown: kept (`::: {.callout-note title="Zusammenfassung"}`)
      const title = DIV_TITLE.exec(line)?.[1]?.trim();
      if (title) this.builder.add('paragraph', title);
      return i + 1;
    }
    const atx = atxHeading(line);
    if (atx) {
      this.flushAll();
      this.heading(atx.text, atx.level);
      return i + 1;
    }
    if (HTML_COMMENT.test(line)) return this.htmlComment(line);
    if (this.paragraph.length > 0 && !this.item && (SETEXT_1.test(line) || SETEXT_2.test(line))) {
      if (this.setextHeading(line)) return i + 1;
      // not a heading: a "---" line below ends the paragraph as a thematic break does
    }
    // a table may also follow a list after a blank line, indented less than the item's text
    const tableAllowed =
      this.paragraph.length === 0 && (!this.item || (wasBlank && indent < this.item.contentIndent));
    const tableEnd = tableAllowed ? this.pandocTables.endAt(i) : undefined;
    if (tableEnd !== undefined) {
      this.flushAll();
      this.listIndents = [];
      this.builder.add('table', this.lines.slice(i, tableEnd).join('\n'));
      return tableEnd;
    }
    if (isThematicBreak(line)) {
      this.flushAll();
      this.listIndents = [];
      return i + 1;
    }
    // indented code: not inside a list and not continuing a paragraph
    if (
      indent >= 4 &&
      this.paragraph.length === 0 &&
      !this.item &&
      this.listIndents.length === 0 &&
      this.quote.length === 0
    ) {
      return this.indentedCode();
    }
    // a GFM table's header row interrupts a paragraph ("Tabelle 1: Preise" right above it stays a paragraph)
    if (
      !this.item &&
      (this.paragraph.length === 0 ? isTableStart(this.lines, i) : isPipeTableHeader(this.lines, i))
    )
      return this.pipeTable();
    const list = LIST_ITEM.exec(line);
    // CommonMark: inside a paragraph only a bullet or an item numbered 1 starts a list
    const interrupts = list && (this.paragraph.length === 0 || /^[-+*]|^1[.)]/.test(list[2]!));
    if (list && interrupts && (indent < 4 || this.listIndents.length > 0)) {
      this.listItem(line, indent, list);
      return i + 1;
    }
    if (BLOCKQUOTE.test(line)) {
      this.flushParagraph();
      this.flushItem();
      this.quote.push(line.trim());
      return i + 1;
    }
    if (this.item) {
      this.item.lines.push(line.trim()); // continuation (indented or lazy) of the open item
    } else if (this.quote.length > 0) {
      this.quote.push(line.trim()); // lazy continuation of a quote
    } else {
      this.paragraph.push(this.listIndents.length > 0 ? line.trim() : line);
    }
    return i + 1;
  }

  /** A fenced code block from this.i to its closing fence (or the end), fences included. */
  /** Fenced code from this.i; `indent`: the fence's indent inside a list item, taken off each of its lines. */
  private fencedCode(marker: string, indent = 0): number {
    this.flushAll();
    const { lines, i } = this;
    const close = new RegExp(
      `^ {0,${indent + 3}}${marker[0] === '`' ? '`' : '~'}{${marker.length},}[ \\t]*$`,
    );
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end]!)) end++;
    const block = lines.slice(i, Math.min(end + 1, lines.length));
    const dedent = new RegExp(`^ {0,${indent}}`);
    this.builder.add('code', (indent > 0 ? block.map((l) => l.replace(dedent, '')) : block).join('\n'));
    return end + 1;
  }

  /** The open paragraph as a Setext heading, when it reads like one; false (nothing done) when not. */
  private setextHeading(underline: string): boolean {
    if (!mayBeSetextHeading(this.paragraph)) return false;
    // one line, but a word a soft hyphen breaks at a line end is one word again
    const text = joinSoftHyphenBreaks(this.paragraph.map((l) => l.trim()).join('\n')).replace(/\n/g, ' ');
    if (text.length > SETEXT_MAX_CHARS || text.endsWith('.')) return false;
    this.paragraph = [];
    this.heading(text, SETEXT_1.test(underline) ? 1 : 2);
    return true;
  }

  /** Indented code from this.i: indented and blank lines, trailing blank lines left out. */
  private indentedCode(): number {
    this.flushAll();
    const { lines, i } = this;
    let end = i;
    while (end < lines.length && (isBlank(lines[end]!) || indentOf(lines[end]!) >= 4)) end++;
    while (end > i && isBlank(lines[end - 1]!)) end--;
    this.builder.add('code', lines.slice(i, end).join('\n'));
    return end;
  }

  /**
   * An HTML comment from this.i to the line that closes it (or the page's end): markup that is not shown, so
   * dropped, as front matter and thematic breaks are; a heading commented out is no section.
   */
  private htmlComment(line: string): number {
    this.flushAll();
    const { lines, i } = this;
    let end = i;
    // from the opening's own dashes: "<!-->" and "<!--->" are whole (empty) comments, as in CommonMark
    let close = line.indexOf('-->', line.indexOf('<!--') + 2);
    while (close < 0 && ++end < lines.length) close = lines[end]!.indexOf('-->');
    // text after the comment on its last line is shown: kept
    const after = close < 0 ? '' : lines[end]!.slice(close + 3).trim();
    if (after !== '') this.builder.add('paragraph', after);
    return end + 1;
  }

  /**
   * A pipe or grid table from this.i to the next blank line, or to a line that starts another block (GFM: a
   * heading, a code fence, a quote, an HTML comment), which is read as that.
   */
  private pipeTable(): number {
    this.flushAll();
    const { lines, i } = this;
    // the delimiter row belongs to the header ("---" under a single column could pass for a thematic break)
    let end = isPipeTableHeader(lines, i) ? i + 2 : i + 1;
    while (end < lines.length && !isBlank(lines[end]!) && !startsOtherBlock(lines[end]!)) end++;
    this.builder.add('table', lines.slice(i, end).join('\n'));
    return end;
  }

  /** A list item's first line: closes what is open and nests the item by its marker's indent. */
  private listItem(line: string, indent: number, list: RegExpExecArray): void {
    this.flushParagraph();
    this.flushQuote();
    this.flushItem();
    const indents = this.listIndents;
    while (indents.length > 0 && indents[indents.length - 1]! > indent) indents.pop();
    if (indents.length === 0 || indents[indents.length - 1]! < indent) indents.push(indent);
    const contentIndent = indent + list[2]!.length + Math.max(1, list[3]!.length);
    this.item = { lines: [line.trim()], level: indents.length - 1, contentIndent };
  }
}
