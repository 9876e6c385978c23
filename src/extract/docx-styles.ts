/**
 * The styles of a Word package (word/styles.xml), read once for what cpe takes from them beside mammoth: headings
 * by outline level or by the heading style they are based on (docx.ts), numbering set on a style
 * (docx-numbering.ts), and the styles that hide their text (docx-hidden.ts).
 */
import { type HiddenStyles, hiddenStyles, NO_HIDDEN_STYLES } from './docx-hidden.js';
import { attr, child, descendants, parseXml, sanitizeXml, type XmlElement } from './xml.js';
import type { ZipArchive } from './zip.js';

export interface ParagraphStyle {
  /** w:name: what mammoth's style map matches */
  name?: string;
  /** w:basedOn: the style this one inherits from */
  basedOn?: string;
  /** w:outlineLvl 0-8 (9 is body text) */
  outline?: number;
  /** w:pPr/w:numPr */
  numId?: string;
  ilvl?: number;
}

const val = (element: XmlElement | undefined) => attr(element, 'val');

export interface WordStyles {
  /** the paragraph styles by id */
  paragraphs: Map<string, ParagraphStyle>;
  hidden: HiddenStyles;
}

/** None when the package has no styles part, or one that cannot be read (mammoth reports it). */
export function readStyles(zip: ZipArchive, file: string): WordStyles {
  const none = { paragraphs: new Map(), hidden: NO_HIDDEN_STYLES };
  if (!zip.has('word/styles.xml')) return none;
  let root: XmlElement;
  try {
    root = parseXml(sanitizeXml(zip.readText('word/styles.xml')), file, 'word/styles.xml');
  } catch {
    return none;
  }
  return { paragraphs: paragraphStyles(root), hidden: hiddenStyles(root) };
}

function paragraphStyles(root: XmlElement): Map<string, ParagraphStyle> {
  const styles = new Map<string, ParagraphStyle>();
  for (const style of descendants(root, 'style')) {
    const id = attr(style, 'styleId');
    if (attr(style, 'type') !== 'paragraph' || !id) continue;
    const properties = child(style, 'pPr');
    const numPr = child(properties, 'numPr');
    const outline = Number(val(child(properties, 'outlineLvl')));
    const ilvl = Number(val(child(numPr, 'ilvl')));
    styles.set(id, {
      name: val(child(style, 'name')),
      basedOn: val(child(style, 'basedOn')),
      ...(Number.isInteger(outline) && outline >= 0 && outline <= 8 && { outline }),
      numId: val(child(numPr, 'numId')),
      ...(Number.isInteger(ilvl) && { ilvl }),
    });
  }
  return styles;
}

/** What `pick` finds on a style or, failing that, on the styles it is based on, nearest first (a cycle ends it). */
export function inheritedFrom<T>(
  styles: ReadonlyMap<string, ParagraphStyle>,
  id: string,
  pick: (style: ParagraphStyle) => T | undefined,
): T | undefined {
  const seen = new Set<string>();
  for (let at: string | undefined = id; at !== undefined && !seen.has(at); ) {
    seen.add(at);
    const style = styles.get(at);
    if (!style) return undefined;
    const found = pick(style);
    if (found !== undefined) return found;
    at = style.basedOn;
  }
  return undefined;
}
