/**
 * The numbers Word shows in front of numbered paragraphs ("1.1 Ziele", "Schritt 2: Rollen verteilen", "a)"), which
 * mammoth leaves out: it turns a numbered paragraph into a list item (or a heading) without its label. German
 * training material refers to them ("siehe Abschnitt 1.1", "Schritt 2"), so cpe puts each label back as text at
 * the start of its paragraph, before mammoth reads the document.
 *
 * Read from word/numbering.xml (w:abstractNum levels: format, label text, start; w:num instances with start
 * overrides) and the paragraph styles' w:numPr (a heading style numbered by the outline). Counters run per list
 * definition (w:abstractNum: its instances count on together, as Word shows them) in document order, a level
 * starting again where an instance overrides its start, and when a higher level counts on. Bullets and
 * levels without a label are left as they are.
 */
import { paragraphProperties, textElement } from './docx-compat.js';
import { inheritedFrom, type ParagraphStyle } from './docx-styles.js';
import { alphabeticNumeral, romanNumeral } from './list-numbers.js';
import { attr, child, children, parseXml, sanitizeXml, type XmlElement } from './xml.js';
import type { ZipArchive } from './zip.js';

interface Level {
  format: string;
  text: string;
  start: number;
}

interface List {
  /** the w:abstractNum it is an instance of: instances of one definition count on together, as Word shows them */
  abstract: string;
  /** its levels by w:ilvl (the abstract definition with the instance's start overrides) */
  levels: Map<number, Level>;
  /** levels this instance starts again (w:lvlOverride/w:startOverride) */
  restarts: Set<number>;
}

interface Numbering {
  /** per w:numId */
  lists: Map<string, List>;
  /** per paragraph style id: the numbering it gives its paragraphs */
  styles: Map<string, { numId: string; ilvl: number }>;
}

const val = (element: XmlElement | undefined) => attr(element, 'val');

/** The numbering definitions of a package; undefined when it has none (nothing to do). */
export function readNumbering(
  zip: ZipArchive,
  file: string,
  styles: ReadonlyMap<string, ParagraphStyle>,
): Numbering | undefined {
  if (!zip.has('word/numbering.xml')) return undefined;
  let root: XmlElement;
  try {
    root = parseXml(sanitizeXml(zip.readText('word/numbering.xml')), file, 'word/numbering.xml');
  } catch {
    return undefined; // mammoth reports a broken numbering part itself
  }
  const abstracts = new Map<string, Map<number, Level>>();
  for (const abstract of children(root, 'abstractNum')) {
    const levels = new Map<number, Level>();
    for (const lvl of children(abstract, 'lvl')) {
      const ilvl = Number(attr(lvl, 'ilvl'));
      if (!Number.isInteger(ilvl)) continue;
      levels.set(ilvl, {
        format: val(child(lvl, 'numFmt')) ?? 'decimal',
        text: val(child(lvl, 'lvlText')) ?? '',
        start: Number(val(child(lvl, 'start')) ?? 1) || 0,
      });
    }
    abstracts.set(attr(abstract, 'abstractNumId') ?? '', levels);
  }
  const lists = new Map<string, List>();
  for (const num of children(root, 'num')) {
    const abstract = val(child(num, 'abstractNumId')) ?? '';
    const levels = new Map(abstracts.get(abstract) ?? []);
    const restarts = new Set<number>();
    for (const override of children(num, 'lvlOverride')) {
      const ilvl = Number(attr(override, 'ilvl'));
      const start = Number(val(child(override, 'startOverride')));
      const level = levels.get(ilvl);
      if (level && Number.isInteger(start)) {
        levels.set(ilvl, { ...level, start });
        restarts.add(ilvl);
      }
    }
    lists.set(attr(num, 'numId') ?? '', { abstract, levels, restarts });
  }
  return { lists, styles: numberedStyles(styles) };
}

/** Paragraph styles that number their paragraphs (w:pPr/w:numPr), their own or from the style they are based on. */
function numberedStyles(styles: ReadonlyMap<string, ParagraphStyle>): Numbering['styles'] {
  const numbered = new Map<string, { numId: string; ilvl: number }>();
  for (const id of styles.keys()) {
    const numId = inheritedFrom(styles, id, (style) => style.numId);
    const ilvl = inheritedFrom(styles, id, (style) => style.ilvl);
    if (numId && numId !== '0') numbered.set(id, { numId, ilvl: ilvl ?? 0 });
  }
  return numbered;
}

/** A counter in a level's number format; undefined for formats that show no number (bullet, none). */
function formatNumber(n: number, format: string): string | undefined {
  switch (format) {
    case 'bullet':
    case 'none':
      return undefined;
    case 'lowerLetter':
      return alphabeticNumeral(n);
    case 'upperLetter':
      return alphabeticNumeral(n).toUpperCase();
    case 'lowerRoman':
      return romanNumeral(n);
    case 'upperRoman':
      return romanNumeral(n).toUpperCase();
    case 'decimalZero':
      return String(n).padStart(2, '0');
    default:
      return String(n); // decimal, and the formats spelled out in words (their digits say the same)
  }
}

const PARAGRAPH = /<w:p(?=[\s>])[^>]*>/g;
const NUM_ID = /<w:numId\s+w:val\s*=\s*"([^"]*)"/;
const ILVL = /<w:ilvl\s+w:val\s*=\s*"([^"]*)"/;
const STYLE = /<w:pStyle\s+w:val\s*=\s*"([^"]*)"/;
/** w:del in a paragraph's own run properties (w:pPr/w:rPr): its paragraph mark is deleted */
const DELETED_MARK = /<w:rPr(?=[\s>])[\s\S]*?<w:del(?=[\s/>])[\s\S]*?<\/w:rPr>/;

/** The [start, end) of each `name` element (outermost ones; they may nest). */
function elementRanges(xml: string, name: string): Array<[number, number]> {
  if (!xml.includes(`<${name}`)) return [];
  const ranges: Array<[number, number]> = [];
  const tag = new RegExp(`<${name}(?=[\\s>])[^>]*>|</${name}>`, 'g');
  let depth = 0;
  let start = 0;
  for (let match = tag.exec(xml); match; match = tag.exec(xml)) {
    if (match[0].startsWith('</')) {
      if (depth > 0 && --depth === 0) ranges.push([start, match.index + match[0].length]);
    } else if (!match[0].endsWith('/>') && depth++ === 0) start = match.index;
  }
  return ranges;
}

/**
 * document.xml with the label of each numbered paragraph as its first run ("1.1 ", "Schritt 2: "), counted in
 * document order. A paragraph numbered by its w:numPr or its style's; numId 0 switches numbering off.
 */
export function withNumberLabels(xml: string, numbering: Numbering): string {
  /** counters per list definition (w:abstractNum), a level's counter at its index */
  const counters = new Map<string, number[]>();
  const restarted = new Set<string>();
  // Word writes a text box twice: for itself (mc:Choice) and for older readers (mc:Fallback), which mammoth reads;
  // the paragraphs of the first are not shown, so they neither count nor get a label
  const hidden = elementRanges(xml, 'mc:Choice');
  let out = '';
  let from = 0;
  let range = 0; // the first hidden range that does not end before the paragraph (both go in document order)
  PARAGRAPH.lastIndex = 0;
  for (let match = PARAGRAPH.exec(xml); match; match = PARAGRAPH.exec(xml)) {
    if (match[0].endsWith('/>')) continue;
    const at = match.index;
    while (range < hidden.length && hidden[range]![1] <= at) range++;
    if (range < hidden.length && hidden[range]![0] <= at) continue;
    const afterStart = match.index + match[0].length;
    // its own properties: a tracked change's old ones left out
    const own = /^<w:pPr[\s>]/.test(xml.slice(afterStart, afterStart + 7))
      ? paragraphProperties(xml, afterStart)
      : undefined;
    const pPrEnd = own ? own.end : -1;
    const properties = own?.own ?? '';
    const numPr = properties.includes('<w:numPr') ? properties : '';
    const styled = numbering.styles.get(STYLE.exec(properties)?.[1] ?? '');
    const numId = NUM_ID.exec(numPr)?.[1] ?? styled?.numId;
    if (!numId || numId === '0') continue;
    // a paragraph whose mark is deleted (a tracked deletion of the whole item) is no item: it neither counts nor
    // gets a label
    if (DELETED_MARK.test(properties)) continue;
    const ilvl = Number(ILVL.exec(numPr)?.[1] ?? styled?.ilvl ?? 0);
    const list = numbering.lists.get(numId);
    const levels = list?.levels;
    const level = levels?.get(ilvl);
    if (!list || !levels || !level) continue;
    const counts = counters.get(list.abstract) ?? [];
    counters.set(list.abstract, counts);
    // an instance that starts a level again does so where it is first used
    const restart = list.restarts.has(ilvl) && !restarted.has(`${numId}:${ilvl}`);
    if (restart) restarted.add(`${numId}:${ilvl}`);
    counts[ilvl] = counts[ilvl] === undefined || restart ? level.start : counts[ilvl] + 1;
    counts.length = ilvl + 1; // deeper levels start again
    if (formatNumber(1, level.format) === undefined || level.text === '') continue;
    let missing = false;
    const label = level.text.replace(/%([1-9])/g, (_, digit: string) => {
      const at = Number(digit) - 1;
      const upper = levels.get(at);
      const count = counts[at] ?? upper?.start;
      const shown = count === undefined || !upper ? undefined : formatNumber(count, upper.format);
      if (shown === undefined) missing = true;
      return shown ?? '';
    });
    if (missing || label.trim() === '') continue;
    const insertAt = pPrEnd < 0 ? afterStart : pPrEnd + '</w:pPr>'.length;
    out += `${xml.slice(from, insertAt)}<w:r>${textElement(`${label} `)}</w:r>`;
    from = insertAt;
  }
  return from === 0 ? xml : out + xml.slice(from);
}
