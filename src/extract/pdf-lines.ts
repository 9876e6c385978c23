/**
 * PDF text runs -> visual lines.
 *
 * Lines keep content-stream order (the reading order the producer wrote: column by column for LaTeX
 * papers), but within a line the runs are placed by their x position, because producers do not always draw
 * a line from left to right: formula editors (MathType, Word's equation objects) draw all glyphs of one font
 * first, then the next font's, so "U = I · R" arrives as "U I R", "=", "·"; TeX draws an accent before or
 * after the letter it sits on; exponents and indices come after the whole line. A run that does not continue
 * the current line is therefore offered to the few lines built just before it: it joins one when it sits on
 * its baseline (or as a sub- or superscript, clearly smaller and shifted by less than half a line) inside its
 * horizontal extent, without covering text already there.
 *
 * Spacing accents (˜ ¨ ´ ˆ …) drawn over a letter become combining marks after that letter, so "˜p" is "p̃"
 * and "¨U" composes to "Ü" under NFC; a dotless ı or ȷ under such an accent is the plain i or j TeX meant.
 */
import type { TextItem } from 'pdfjs-dist/types/src/display/api.js';

export interface TextLine {
  text: string;
  /** baseline y of the line's tallest run, in PDF user space turned so the text runs left to right */
  y: number;
  x0: number;
  x1: number;
  /** font size (largest run on the line) */
  size: number;
  bold: boolean;
}

interface Fragment {
  str: string;
  x: number;
  x1: number;
  y: number;
  /** glyph height: baselines, scripts and overlaps are judged by it */
  size: number;
  /** fontSizeOf the run: spacing and the line's reported size use it */
  fontSize: number;
  /** position in the content stream */
  order: number;
}

interface LineDraft {
  fragments: Fragment[];
  y: number;
  x0: number;
  x1: number;
  /** horizontal extent of the runs with glyphs (pdf.js's blank runs can be far wider than the gap) */
  inkX0: number;
  inkX1: number;
  /** height of the line's tallest run (its baseline is the line's) */
  size: number;
  /** the largest fontSizeOf among the line's runs with glyphs, and whether that run is bold */
  fontSize: number;
  bold: boolean;
  /** a run was placed before one that came earlier in the stream: pdf.js's gap markers may be stale */
  reordered: boolean;
  /** right-to-left runs stay in stream order (pdf.js has put them in logical order already) */
  rtl: boolean;
}

/** how many of the lines built last a run that does not continue the current line may join */
const RECENT_LINES = 8;

/** spacing (non-combining) accents and the combining marks they stand for */
const COMBINING: Record<string, string> = {
  '\u0060': '\u0300', // ` grave (only when drawn over a letter)
  '\u00B4': '\u0301', // ´ acute
  '\u02C6': '\u0302', // ˆ circumflex
  '\u02DC': '\u0303', // ˜ tilde
  '\u00AF': '\u0304', // ¯ macron
  '\u02C9': '\u0304', // ˉ modifier macron
  '\u02D8': '\u0306', // ˘ breve
  '\u02D9': '\u0307', // ˙ dot above
  '\u00A8': '\u0308', // ¨ diaeresis
  '\u02DA': '\u030A', // ˚ ring above
  '\u02DD': '\u030B', // ˝ double acute
  '\u02C7': '\u030C', // ˇ caron
  '\u00B8': '\u0327', // ¸ cedilla
  '\u02DB': '\u0328', // ˛ ogonek
};

export const fontSizeOf = (item: TextItem): number => {
  const [a, b, c, d] = item.transform as number[];
  return Math.max(Math.hypot(c ?? 0, d ?? 0), Math.hypot(a ?? 0, b ?? 0) * 0.5, item.height || 0) || 1;
};

const isBlank = (str: string): boolean => str.trim() === '';

/**
 * Text runs -> lines, in content-stream order. A run continues the current line when it sits on its
 * baseline and does not jump back more than two font sizes; otherwise it may fill in one of the lines built
 * just before (see above), or it starts a new line.
 */
export function groupLines(items: TextItem[], isBold: (fontName: string) => boolean): TextLine[] {
  const lines: LineDraft[] = [];
  let current: LineDraft | undefined;
  const turn = dominantTurn(items);
  let order = 0;
  for (const item of items) {
    const str = item.str;
    if (str !== '') {
      const [x, y] = turned(turn, Number(item.transform[4]) || 0, Number(item.transform[5]) || 0);
      const fontSize = fontSizeOf(item);
      // a glyph stretched sideways (a scale of 64 in an OCR layer) is not a taller line
      const height = Math.hypot(Number(item.transform[2]) || 0, Number(item.transform[3]) || 0) || fontSize;
      const fragment: Fragment = {
        str,
        x,
        x1: x + (Number(item.width) || 0),
        y,
        size: height,
        fontSize,
        order: order++,
      };
      const rtl = item.dir === 'rtl';
      let line = current && continues(current, fragment) ? current : undefined;
      for (let i = lines.length - 1; !line && !rtl && i >= Math.max(0, lines.length - RECENT_LINES); i--) {
        if (!lines[i]!.rtl && fillsIn(lines[i]!, fragment)) line = lines[i]!;
      }
      if (!line) {
        line = {
          fragments: [],
          y: fragment.y,
          x0: x,
          x1: x,
          inkX0: Number.POSITIVE_INFINITY,
          inkX1: Number.NEGATIVE_INFINITY,
          size: fragment.size,
          fontSize: fragment.fontSize,
          bold: isBold(item.fontName),
          reordered: false,
          rtl: false,
        };
        lines.push(line);
      }
      line.rtl ||= rtl;
      place(line, fragment);
      if (!isBlank(str)) {
        if (fragment.size > line.size) [line.size, line.y] = [fragment.size, fragment.y];
        if (fragment.fontSize > line.fontSize) {
          line.fontSize = fragment.fontSize;
          line.bold = isBold(item.fontName);
        }
      }
      current = line;
    }
    if (item.hasEOL) current = undefined;
  }
  return lines
    .map((line) => ({
      text: render(line),
      y: line.y,
      x0: line.x0,
      x1: line.x1,
      size: line.fontSize,
      bold: line.bold,
    }))
    .filter((line) => line.text.trim() !== '');
}

/**
 * The quarter turns (0-3) by which most of the page's text is rotated: text on a page turned for landscape
 * printing runs up or down the page, and its lines are found in the frame where it runs left to right.
 */
function dominantTurn(items: TextItem[]): number {
  const weights = [0, 0, 0, 0];
  for (const item of items) {
    const [a, b] = item.transform as number[];
    if (!a && !b) continue;
    const turn = (((Math.round(Math.atan2(b ?? 0, a ?? 0) / (Math.PI / 2)) % 4) + 4) % 4) as 0 | 1 | 2 | 3;
    weights[turn]! += item.str.length;
  }
  return weights.indexOf(Math.max(...weights));
}

/** A point in the frame turned back by `turn` quarter turns. */
function turned(turn: number, x: number, y: number): [number, number] {
  if (turn === 1) return [y, -x];
  if (turn === 2) return [-x, -y];
  if (turn === 3) return [-y, x];
  return [x, y];
}

/** On the line's baseline ("same"), or a sub- or superscript of it, or the line a script of the run. */
function baselineFit(line: LineDraft, fragment: Fragment): 'same' | 'script' | undefined {
  const dy = fragment.y - line.y;
  if (Math.abs(dy) <= 0.5 * Math.min(fragment.size, line.size) + 0.5) return 'same';
  const [small, big, shift] =
    fragment.size < line.size ? [fragment.size, line.size, dy] : [line.size, fragment.size, -dy];
  if (small <= big * 0.85 && shift >= -0.45 * big && shift <= 0.6 * big) return 'script';
  return undefined;
}

/** The line's horizontal extent: of its glyphs, or of its blank runs while it has no glyphs. */
const extent = (line: LineDraft): [number, number] =>
  line.inkX1 >= line.inkX0 ? [line.inkX0, line.inkX1] : [line.x0, line.x1];

function continues(line: LineDraft, fragment: Fragment): boolean {
  const fit = baselineFit(line, fragment);
  const size = Math.max(fragment.size, line.size);
  const [x0, x1] = extent(line);
  if (fit === 'same') return fragment.x >= x1 - size * 2;
  // a script stays next to what it belongs to
  return fit === 'script' && fragment.x >= x0 - size * 0.5 && fragment.x <= x1 + size * 0.5;
}

/**
 * A run drawn out of order that belongs inside (or right at the edge of) an earlier line; also a run that
 * pdf.js put on a new line (its hasEOL guess) although it goes on at a word's distance on the same baseline.
 */
function fillsIn(line: LineDraft, fragment: Fragment): boolean {
  if (!baselineFit(line, fragment)) return false;
  const reach = Math.max(fragment.size, line.size) * 0.5;
  const [x0, x1] = extent(line);
  if (fragment.x < x0 - reach || fragment.x > x1 + reach) return false;
  if (isBlank(fragment.str) || accentOf(fragment) !== undefined) return true;
  // text already standing there is another layer (a stamp, a form value), not a gap to fill; stacked
  // scripts (an index under an exponent) and a glyph set into the gap of a run are not in the way
  return !line.fragments.some(
    (other) =>
      !isBlank(other.str) &&
      overlap(other, fragment) > 0.5 * Math.min(other.x1 - other.x, fragment.x1 - fragment.x) &&
      !stacked(line, other, fragment) &&
      gapInRun(other, fragment) === undefined,
  );
}

const overlap = (a: Fragment, b: Fragment): number => Math.min(a.x1, b.x1) - Math.max(a.x, b.x);
const centre = (fragment: Fragment): number => (fragment.x + fragment.x1) / 2;

/** An index under an exponent (or the other way round): two short scripts of the line, one above the other. */
const stacked = (line: LineDraft, a: Fragment, b: Fragment): boolean =>
  Math.max(a.size, b.size) <= 0.85 * line.size &&
  Math.max(a.str.trim().length, b.str.trim().length) <= 4 &&
  verticalOverlap(a, b) < 0.5;

/** How much of the smaller of two runs' glyph bands (descender to cap height) they share: 0 to 1. */
function verticalOverlap(a: Fragment, b: Fragment): number {
  const band = (f: Fragment): [number, number] => [f.y - 0.2 * f.size, f.y + 0.7 * f.size];
  const [a0, a1] = band(a);
  const [b0, b1] = band(b);
  return Math.max(0, Math.min(a1, b1) - Math.max(a0, b0)) / (0.9 * Math.min(a.size, b.size));
}

/**
 * The space character of `host` that a single glyph drawn later fills ("0 001" + "," = "0,001"): same size,
 * same baseline, centred on that space. Undefined when it is not such a glyph.
 */
function gapInRun(host: Fragment, glyph: Fragment): number | undefined {
  const x = centre(glyph);
  if (x <= host.x || x >= host.x1 || glyph.str.length > 2 || [...glyph.str].length !== 1) return undefined;
  if (Math.abs(host.size - glyph.size) > 0.15 * host.size) return undefined;
  if (Math.abs(host.y - glyph.y) > 0.15 * host.size) return undefined;
  if (isBlank(glyph.str) || isBlank(host.str) || accentOf(glyph) !== undefined) return undefined;
  return spaceUnder(host, x);
}

/** The index of the space character of `host` at position x (glyph widths estimated as equal). */
function spaceUnder(host: Fragment, x: number): number | undefined {
  if (x < host.x || x > host.x1) return undefined;
  const chars = [...host.str];
  const width = (host.x1 - host.x) / chars.length;
  if (!(width > 0)) return undefined;
  const at = Math.min(chars.length - 1, Math.floor((x - host.x) / width));
  return chars[at] === ' ' && at > 0 && at < chars.length - 1 ? at : undefined;
}

/** Puts a run into the line: in x order (stream order for right-to-left text). */
function place(line: LineDraft, fragment: Fragment): void {
  line.x0 = Math.min(line.x0, fragment.x);
  line.x1 = Math.max(line.x1, fragment.x1);
  if (!isBlank(fragment.str)) {
    line.inkX0 = Math.min(line.inkX0, fragment.x);
    line.inkX1 = Math.max(line.inkX1, fragment.x1);
  }
  const list = line.fragments;
  if (line.rtl) {
    list.push(fragment);
    return;
  }
  // a single glyph drawn into the gap of a run takes that gap's place
  for (const host of list) {
    const k = gapInRun(host, fragment);
    if (k === undefined) continue;
    const chars = [...host.str];
    chars[k] = fragment.str;
    host.str = chars.join('');
    line.reordered = true;
    return;
  }
  let at = list.length;
  while (at > 0 && list[at - 1]!.x > fragment.x) at--;
  if (at < list.length) line.reordered = true;
  list.splice(at, 0, fragment);
}

/** The spacing accent a run consists of, or ends with: its character and the x it is centred on. */
function accentOf(fragment: Fragment): { char: string; x: number } | undefined {
  const trimmed = fragment.str.trimEnd();
  const last = trimmed[trimmed.length - 1]; // the accents are all in the BMP
  if (last === undefined || COMBINING[last] === undefined) return undefined;
  const chars = [...trimmed];
  if (last === '`' && chars.length > 1) return undefined; // a backtick ending a word is a backtick
  const width = (fragment.x1 - fragment.x) / chars.length;
  return { char: last, x: chars.length === 1 ? centre(fragment) : fragment.x1 - width / 2 };
}

/** Spacing accents drawn over a letter of another run -> combining mark after that letter. */
function attachAccents(fragments: Fragment[]): void {
  for (const accent of fragments) {
    const found = accentOf(accent);
    if (!found) continue;
    for (const host of fragments) {
      if (host === accent || isBlank(host.str) || found.x < host.x || found.x > host.x1) continue;
      const chars = [...host.str];
      const width = (host.x1 - host.x) / chars.length;
      const at = Math.min(chars.length - 1, Math.floor((found.x - host.x) / width));
      const k = [at, at - 1, at + 1].find((i) => /\p{L}/u.test(chars[i] ?? ''));
      if (k === undefined) continue;
      chars[k] = `${chars[k]}${COMBINING[found.char]}`;
      host.str = chars.join('');
      const rest = [...accent.str.trimEnd()].slice(0, -1).join('');
      accent.str = rest === '' ? '' : `${rest}${accent.str.slice(accent.str.trimEnd().length)}`;
      break;
    }
  }
}

function render(line: LineDraft): string {
  attachAccents(line.fragments);
  const fragments = unstack(
    line,
    line.fragments.filter((fragment) => fragment.str !== ''),
  );
  let text = '';
  let end = Number.NEGATIVE_INFINITY;
  let previous: Fragment | undefined;
  const firstGlyphs = fragments.find((fragment) => !isBlank(fragment.str));
  for (const fragment of fragments) {
    const blank = isBlank(fragment.str);
    if (blank && line.reordered) {
      // pdf.js marks gaps with blank runs; in a reordered line a glyph drawn later may sit in that gap
      if (/\s$/.test(text) || fragments.some((other) => covers(other, fragment))) continue;
    }
    if (!blank && text !== '' && !/\s$/.test(text) && !/^\s/.test(fragment.str)) {
      const gap = fragment.x - end;
      if (gap > fragment.fontSize * 3) text += '\t';
      else if (gap > fragment.fontSize * 0.15) text += ' ';
      // a raised mark opening the line is a footnote's number, not an exponent of the word after it
      else if (previous && previous === firstGlyphs && raised(line, previous)) text += ' ';
    }
    text += fragment.str;
    end = Math.max(end, fragment.x1);
    if (!blank) previous = fragment;
  }
  return text.replace(/[ıȷ](?=[\u0300-\u0314])/g, (dotless) => (dotless === 'ı' ? 'i' : 'j'));
}

/**
 * An index and an exponent set on top of each other (ϕ with i below and −1 above), or the numerator and
 * denominator of a small fraction, interleave when sorted by x ("ϕ−i1"). Such a stack is written level by
 * level, each level in x order, the levels in the order they were drawn ("ϕ−1i", "½" as "12").
 */
function unstack(line: LineDraft, fragments: Fragment[]): Fragment[] {
  const level = (fragment: Fragment): number => {
    if (isBlank(fragment.str) || fragment.size > 0.85 * line.size) return 0;
    const shift = fragment.y - line.y;
    return Math.abs(shift) <= 0.1 * line.size ? 0 : Math.sign(shift);
  };
  const result: Fragment[] = [];
  let stack: Fragment[] = [];
  let reach = Number.NEGATIVE_INFINITY;
  const flush = () => {
    const first = new Map<number, number>();
    for (const fragment of stack) {
      const at = level(fragment);
      first.set(at, Math.min(first.get(at) ?? Number.POSITIVE_INFINITY, fragment.order));
    }
    if (first.size > 1) stack.sort((a, b) => first.get(level(a))! - first.get(level(b))!);
    result.push(...stack);
    stack = [];
  };
  for (const fragment of fragments) {
    if (level(fragment) === 0) {
      flush();
      result.push(fragment);
      continue;
    }
    if (stack.length > 0 && fragment.x > reach + 0.1 * line.size) flush();
    if (stack.length === 0) reach = Number.NEGATIVE_INFINITY;
    stack.push(fragment);
    reach = Math.max(reach, fragment.x1);
  }
  flush();
  return result;
}

const raised = (line: LineDraft, fragment: Fragment): boolean =>
  fragment.size <= line.size * 0.85 && fragment.y - line.y > line.size * 0.2;

/** A glyph run standing inside a blank run's span (not just touching it). */
function covers(glyphs: Fragment, blank: Fragment): boolean {
  const margin = blank.size * 0.05;
  return !isBlank(glyphs.str) && glyphs.x < blank.x1 - margin && glyphs.x1 > blank.x + margin;
}
