/**
 * WordprocessingML that mammoth (1.x) does not read, rewritten into what it does, before it sees a part. Without
 * this its text is dropped with nothing but a mammoth warning: Word writes caption numbers ("Abbildung 1") and
 * merge fields as w:fldSimple, line breaks as w:cr, right-to-left runs in w:dir / w:bdo, formulas in m:oMath.
 *
 * - w:fldSimple, w:dir, w:bdo, m:oMathPara: the element goes, its content stays (their runs are ordinary runs);
 * - w:cr: a w:br (a line break); w:ptab (a tab to a fixed position: "Firma", right-aligned "Seite 3"): a w:tab;
 * - m:oMath: one run with the formula's text (its m:t texts in order: "E=mc²", "a2+b2=c2"; the layout of
 *   fractions and exponents is lost, the symbols are kept);
 * - w:sdt showing its placeholder (w:showingPlcHdr: "Klicken oder tippen Sie hier, um Text einzugeben."): the
 *   control is empty, so it goes with its prompt;
 * - w:drawing of SmartArt or a chart: the texts of its data part, given by the caller (mammoth reads neither), as
 *   lines of the run that held the drawing;
 * - a paragraph's own w:outlineLvl (Word's "Gliederungsebene" set on the paragraph, not on its style; it wins over
 *   the style's): the paragraph style becomes OUTLINE_STYLE_IDS' one for that level (heading levels 1-9, or body
 *   text), which STYLE_MAP in docx.ts maps. Mammoth maps paragraphs by their style alone.
 *
 * String work over tags of fixed names, each found with indexOf or an anchored pattern that reads quoted attribute
 * values whole (an attribute may hold ">"): one pass per rewrite, linear in the part.
 */

/** The start and end tags of `name` (qualified, e.g. "w:dir"): attributes read quoted, so ">" inside them is kept. */
const tags = (name: string) =>
  new RegExp(`<${name}(?=[\\s/>])(?:\\s+[^\\s=/>]+\\s*=\\s*(?:"[^"]*"|'[^']*'))*\\s*/?>|</${name}\\s*>`, 'g');

const UNWRAPPED = ['w:fldSimple', 'w:dir', 'w:bdo', 'm:oMathPara'].map(tags);
const CARRIAGE_RETURN =
  /<w:cr(?=[\s/>])(?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*(?:\/>|>\s*<\/w:cr\s*>)/g;
const POSITIONAL_TAB =
  /<w:ptab(?=[\s/>])(?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*(?:\/>|>\s*<\/w:ptab\s*>)/g;
const MATH_START = tags('m:oMath');
const MATH_TEXT = /<m:t(?=[\s>])(?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*>([^<]*)<\/m:t\s*>/g;

/** The texts of a drawing's data part by its relationship id (SmartArt: r:dm; chart: r:id), when there is one. */
export type DrawingTexts = (relationshipId: string, kind: 'diagram' | 'chart') => string[] | undefined;

/**
 * The paragraph style ids a paragraph's own outline level is given as (w:outlineLvl 0-8: heading levels 1-9; 9:
 * body text). Styles of these ids are not defined in the package; mammoth maps them by id all the same.
 */
export const OUTLINE_STYLE_IDS = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((level) => `CpeOutline${level}`);
export const BODY_TEXT_STYLE_ID = 'CpeBodyText';

/**
 * The part with the elements above rewritten; a part without any comes back as it was. Drawings and outline levels
 * only in the document part (word/document.xml, given with its drawings' texts): styles.xml and numbering.xml hold
 * properties of styles and list levels, not of paragraphs.
 */
export function rewriteForMammoth(xml: string, documentPart?: { drawingTexts: DrawingTexts }): string {
  const drawings = documentPart !== undefined && xml.includes('<w:drawing');
  const outlines = documentPart !== undefined && xml.includes('<w:outlineLvl');
  if (
    !outlines &&
    !xml.includes('<w:fldSimple') &&
    !xml.includes('<w:cr') &&
    !xml.includes('<w:ptab') &&
    !xml.includes('<w:dir') &&
    !xml.includes('<w:bdo') &&
    !xml.includes('<m:oMath') &&
    !xml.includes('<w:showingPlcHdr') &&
    !drawings
  )
    return xml;
  let out = xml;
  for (const pattern of UNWRAPPED) out = out.replace(pattern, '');
  out = out.replace(CARRIAGE_RETURN, '<w:br/>').replace(POSITIONAL_TAB, '<w:tab/>');
  if (out.includes('<m:oMath')) out = mathAsRuns(out);
  if (out.includes('<w:showingPlcHdr')) out = withoutPlaceholders(out);
  if (outlines) out = outlineLevelsAsStyles(out);
  return drawings ? drawingsAsText(out, documentPart.drawingTexts) : out;
}

const OUTLINE_LEVEL = /<w:outlineLvl(?=[\s/>])[^>]*?\sw:val\s*=\s*"(\d+)"/;
const PARAGRAPH_STYLE =
  /<w:pStyle(?=[\s/>])(?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*(?:\/>|>\s*<\/w:pStyle\s*>)/;
const PROPERTIES_TAG = /<w:pPr(?=[\s>])[^>]*>|<\/w:pPr>/g;

/** A paragraph's properties (w:pPr) as paragraphProperties reads them. */
export interface ParagraphProperties {
  /** where its content starts (after its start tag) */
  bodyStart: number;
  /** where its end tag starts */
  end: number;
  /** its own properties */
  own: string;
  /** what a tracked change says they were before (w:pPrChange, the last child), '' without one */
  change: string;
}

/**
 * The w:pPr whose start tag is at `start`, split into the paragraph's own properties and a tracked change's old
 * ones (w:pPrChange holds a w:pPr of its own); undefined when it is self-closed or never closed.
 */
export function paragraphProperties(xml: string, start: number): ParagraphProperties | undefined {
  let depth = 0;
  let bodyStart = -1;
  PROPERTIES_TAG.lastIndex = start;
  for (let tag = PROPERTIES_TAG.exec(xml); tag; tag = PROPERTIES_TAG.exec(xml)) {
    if (!tag[0].startsWith('</')) {
      if (tag[0].endsWith('/>')) {
        if (depth === 0) return undefined;
        continue;
      }
      if (depth++ === 0) bodyStart = tag.index + tag[0].length;
      continue;
    }
    if (--depth > 0) continue;
    const body = xml.slice(bodyStart, tag.index);
    const change = body.indexOf('<w:pPrChange');
    return change < 0
      ? { bodyStart, end: tag.index, own: body, change: '' }
      : { bodyStart, end: tag.index, own: body.slice(0, change), change: body.slice(change) };
  }
  return undefined;
}

const PROPERTIES_START = /<w:pPr(?=[\s>])/g;

/**
 * Each w:pPr with an outline level of its own: its paragraph style set to the level's OUTLINE_STYLE_IDS entry.
 * What a tracked change says the properties were before is left alone.
 */
function outlineLevelsAsStyles(xml: string): string {
  let out = '';
  let from = 0;
  PROPERTIES_START.lastIndex = 0;
  for (let tag = PROPERTIES_START.exec(xml); tag; tag = PROPERTIES_START.exec(xml)) {
    const properties = paragraphProperties(xml, tag.index);
    if (!properties) continue;
    // the w:pPr inside its tracked change is part of it
    PROPERTIES_START.lastIndex = properties.end;
    const { own, change } = properties;
    const level = OUTLINE_LEVEL.exec(own)?.[1];
    if (level === undefined) continue;
    const id = Number(level) <= 8 ? OUTLINE_STYLE_IDS[Number(level)]! : BODY_TEXT_STYLE_ID;
    // body text needs doing only where a style (a heading's) would say otherwise
    if (id === BODY_TEXT_STYLE_ID && !PARAGRAPH_STYLE.test(own)) continue;
    const style = `<w:pStyle w:val="${id}"/>`;
    const restyled = PARAGRAPH_STYLE.test(own) ? own.replace(PARAGRAPH_STYLE, style) : style + own;
    out += xml.slice(from, properties.bodyStart) + restyled + change;
    from = properties.end;
  }
  return from === 0 ? xml : out + xml.slice(from);
}

/**
 * The tags a content control's placeholder is read from, in one forward pass: w:sdt, its w:sdtPr (properties) and
 * w:sdtContent, and w:showingPlcHdr. Attributes read quoted.
 */
const CONTROL_TAG =
  /<(\/?)(w:sdt|w:sdtPr|w:sdtContent|w:showingPlcHdr)(?=[\s/>])((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
/** a w:val attribute, in either quotes */
const VAL_ATTRIBUTE = /\sw:val\s*=\s*(?:"([^"]*)"|'([^']*)')/;

/**
 * A WordprocessingML on/off property's w:val turning it off (ST_OnOff: 0, false, off); no w:val, or 1, true, on,
 * leaves it on.
 */
export const isOff = (value: string | undefined): boolean =>
  value !== undefined && /^(?:0|false|off)$/.test(value);

const valOf = (attributes: string | undefined): string | undefined => {
  const match = VAL_ATTRIBUTE.exec(attributes ?? '');
  return match ? (match[1] ?? match[2]) : undefined;
};

interface OpenControl {
  start: number;
  /** inside its own w:sdtPr now */
  inProperties: boolean;
  placeholder: boolean;
  /** its content is a table cell (a control around a w:tc): an empty cell takes its place, so columns stay */
  cell: boolean;
}

/**
 * Removes each w:sdt (content control) that shows its placeholder instead of content; they may nest. One pass over
 * the tags (a search per control for its properties' end took nested controls quadratic time: 30,000 of them 28 s,
 * and read a self-closed `<w:sdtPr/>` as reaching to an inner control's properties).
 */
function withoutPlaceholders(xml: string): string {
  const drop: Array<[number, number, boolean]> = [];
  const open: OpenControl[] = [];
  CONTROL_TAG.lastIndex = 0;
  for (let tag = CONTROL_TAG.exec(xml); tag; tag = CONTROL_TAG.exec(xml)) {
    const [whole, closing, name, attributes, selfClosed] = tag;
    const top = open[open.length - 1];
    if (name === 'w:sdt') {
      if (selfClosed) continue;
      if (!closing) {
        open.push({ start: tag.index, inProperties: false, placeholder: false, cell: false });
        continue;
      }
      const control = open.pop();
      if (control?.placeholder) drop.push([control.start, tag.index + whole.length, control.cell]);
    } else if (name === 'w:sdtPr') {
      if (top) top.inProperties = !closing && !selfClosed;
    } else if (name === 'w:sdtContent') {
      if (top && !closing) {
        top.inProperties = false;
        let next = tag.index + whole.length;
        while (next < xml.length && /\s/.test(xml[next]!)) next++;
        top.cell = xml.startsWith('<w:tc', next) && /[\s/>]/.test(xml[next + 5] ?? '');
      }
    } else if (top?.inProperties && !closing && !isOff(valOf(attributes))) {
      top.placeholder = true; // w:showingPlcHdr in the control's own properties
    }
  }
  if (drop.length === 0) return xml;
  drop.sort((a, b) => a[0] - b[0]);
  let out = '';
  let from = 0;
  for (const [start, end, cell] of drop) {
    if (start < from) continue; // inside one dropped already
    out += xml.slice(from, start) + (cell ? '<w:tc><w:p/></w:tc>' : '');
    from = end;
  }
  return out + xml.slice(from);
}

const DRAWING = /<w:drawing(?=[\s>])[\s\S]*?<\/w:drawing\s*>/g;
const DIAGRAM_REF = /<(?:\w+:)?relIds\b[^>]*?\s(?:\w+:)?dm\s*=\s*"([^"]*)"/;
const CHART_REF = /<(?:\w+:)?chart\b[^>]*?\s(?:\w+:)?id\s*=\s*"([^"]*)"/;

/** A w:t element holding `text` (escaped, white space kept): text put into a part before mammoth reads it. */
export const textElement = (text: string) =>
  `<w:t xml:space="preserve">${text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')}</w:t>`;

/** Each w:drawing of SmartArt or a chart with texts: replaced by those texts, one line each, in its run. */
function drawingsAsText(xml: string, drawingTexts: DrawingTexts): string {
  return xml.replace(DRAWING, (drawing) => {
    const diagram = DIAGRAM_REF.exec(drawing)?.[1];
    const chart = diagram === undefined ? CHART_REF.exec(drawing)?.[1] : undefined;
    const texts =
      diagram !== undefined
        ? drawingTexts(diagram, 'diagram')
        : chart !== undefined
          ? drawingTexts(chart, 'chart')
          : undefined;
    if (!texts?.length) return drawing;
    return texts
      .flatMap((text) => text.split('\n'))
      .map(textElement)
      .join('<w:br/>');
  });
}

/** Each m:oMath element (they do not nest) as one run with its text. */
function mathAsRuns(xml: string): string {
  let out = '';
  let from = 0;
  MATH_START.lastIndex = 0;
  for (let start = MATH_START.exec(xml); start; start = MATH_START.exec(xml)) {
    if (start[0].startsWith('</')) continue; // a stray end tag: left as it is
    const bodyStart = start.index + start[0].length;
    const end = start[0].endsWith('/>') ? bodyStart : xml.indexOf('</m:oMath>', bodyStart);
    if (end < 0) break; // never closed: malformed, left for the XML reader to report
    let text = '';
    for (const match of xml.slice(bodyStart, end).matchAll(MATH_TEXT)) text += match[1];
    out += `${xml.slice(from, start.index)}${text ? `<w:r><w:t xml:space="preserve">${text}</w:t></w:r>` : ''}`;
    from = start[0].endsWith('/>') ? bodyStart : end + '</m:oMath>'.length;
    MATH_START.lastIndex = from;
  }
  return from === 0 ? xml : out + xml.slice(from);
}
