/**
 * Hidden text of a Word document (Format › Schriftart › Ausgeblendet: `w:vanish`): Word neither shows nor prints
 * it, and mammoth reads it as ordinary text. Runs that are hidden are taken out of a part before it is read, so
 * that what cpe extracts is what the document shows: answers hidden in an exercise sheet, notes to the author,
 * a superseded sentence.
 *
 * A run is hidden by its own properties (w:r/w:rPr/w:vanish), else by its character style (w:rStyle), else by its
 * paragraph's style (w:pStyle); a `w:val` of 0/false/off on a nearer one shows it again. Styles inherit through
 * w:basedOn. Not hidden: w:webHidden (hidden in web layout only: a table of contents' page numbers), w:specVanish
 * (a style separator's paragraph mark), the paragraph mark's own w:vanish (which joins the paragraph to the next
 * on screen; both paragraphs' runs stay), and properties inside a tracked change of formatting (w:rPrChange: what
 * the run looked like before).
 *
 * A hidden run holding a complex field's begin/separate/end mark or its instruction stays as it is (it has no
 * text to show): taking it away would leave mammoth a field with a missing end.
 *
 * One forward pass over the tags of the part (attributes read quoted), linear in its size; a part without any
 * w:vanish and without a hidden style's id comes back as it was.
 */
import { isOff } from './docx-compat.js';
import { attr, child, descendants, type XmlElement } from './xml.js';

/**
 * What styles say about hidden text: character styles that hide their runs or show them (`runs`: true / false;
 * absent when the style says nothing), and the paragraph styles that hide their paragraphs' runs.
 */
export interface HiddenStyles {
  runs: ReadonlyMap<string, boolean>;
  paragraphs: ReadonlySet<string>;
}

export const NO_HIDDEN_STYLES: HiddenStyles = { runs: new Map(), paragraphs: new Set() };

/** Which character and paragraph styles of word/styles.xml hide their text, through w:basedOn (a cycle ends it). */
export function hiddenStyles(stylesRoot: XmlElement): HiddenStyles {
  const own = new Map<string, { type: string; vanish?: boolean; basedOn?: string }>();
  for (const style of descendants(stylesRoot, 'style')) {
    const id = attr(style, 'styleId');
    const type = attr(style, 'type');
    if (!id || (type !== 'character' && type !== 'paragraph')) continue;
    const vanish = child(child(style, 'rPr'), 'vanish');
    own.set(id, {
      type,
      ...(vanish !== undefined && { vanish: !isOff(attr(vanish, 'val')) }),
      basedOn: attr(child(style, 'basedOn'), 'val'),
    });
  }
  const runs = new Map<string, boolean>();
  const paragraphs = new Set<string>();
  for (const [id, style] of own) {
    const seen = new Set<string>();
    let hidden: boolean | undefined;
    for (let at: string | undefined = id; at !== undefined && !seen.has(at); at = own.get(at)?.basedOn) {
      seen.add(at);
      hidden = own.get(at)?.vanish;
      if (hidden !== undefined) break;
    }
    if (hidden === undefined) continue;
    if (style.type === 'character') runs.set(id, hidden);
    else if (hidden) paragraphs.add(id);
  }
  // only worth a pass over the parts when some style hides text
  return [...runs.values()].includes(true) || paragraphs.size > 0 ? { runs, paragraphs } : NO_HIDDEN_STYLES;
}

/** Any element's start or end tag, attributes read quoted (an attribute may hold ">"). */
const TAG = /<(\/?)([A-Za-z_][\w.-]*(?::[\w.-]+)?)((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g;
const VAL = /\s[\w.-]*:?val\s*=\s*(?:"([^"]*)"|'([^']*)')/;
/** marks of a complex field: a run holding one is kept (see above) */
const FIELD_MARKS = new Set(['w:fldChar', 'w:instrText', 'w:delInstrText']);
/** how far down the open elements an end tag that does not close the innermost one is looked for */
const MAX_UNCLOSED = 64;

const valOf = (attributes: string): string | undefined => {
  const match = VAL.exec(attributes);
  return match ? (match[1] ?? match[2]) : undefined;
};

interface OpenRun {
  start: number;
  /** its own w:vanish, when it has one */
  own?: boolean;
  /** its character style's, when the style says */
  style?: boolean;
  /** its paragraph's style hides its text */
  paragraph: boolean;
  /** it holds a complex field's mark */
  field?: boolean;
}

/** The part without its hidden runs, and how many were taken out. */
export function withoutHiddenRuns(xml: string, styles: HiddenStyles): { xml: string; hidden: number } {
  const byStyle = styles !== NO_HIDDEN_STYLES;
  if (!xml.includes('<w:vanish') && !(byStyle && (xml.includes('<w:rStyle') || xml.includes('<w:pStyle'))))
    return { xml, hidden: 0 };
  const names: string[] = [];
  const runs: OpenRun[] = [];
  /** whether each open paragraph's style hides its runs */
  const paragraphs: boolean[] = [];
  const drop: Array<[number, number]> = [];
  TAG.lastIndex = 0;
  for (let tag = TAG.exec(xml); tag; tag = TAG.exec(xml)) {
    const [whole, closing, name, attributes, selfClosed] = tag;
    if (closing) {
      // well-formed XML closes the innermost open element; an end tag that does not is malformed, and the XML
      // reader reports it later: it closes what it matches among the nearest open elements, or nothing
      let at = names.length - 1;
      while (at >= 0 && at >= names.length - MAX_UNCLOSED && names[at] !== name) at--;
      if (at < 0 || names[at] !== name) continue;
      while (names.length > at) {
        const top = names.pop();
        if (top === 'w:p') paragraphs.pop();
        else if (top === 'w:r') {
          const run = runs.pop()!;
          if ((run.own ?? run.style ?? run.paragraph) && !run.field)
            drop.push([run.start, tag.index + whole.length]);
        }
      }
      continue;
    }
    const parent = names[names.length - 1];
    const inRunProperties = parent === 'w:rPr' && names[names.length - 2] === 'w:r';
    if (name === 'w:vanish' && inRunProperties) {
      const run = runs[runs.length - 1];
      if (run) run.own = !isOff(valOf(attributes!));
    } else if (name === 'w:rStyle' && inRunProperties) {
      const run = runs[runs.length - 1];
      if (run) run.style = styles.runs.get(valOf(attributes!) ?? '');
    } else if (name === 'w:pStyle' && parent === 'w:pPr' && names[names.length - 2] === 'w:p') {
      if (paragraphs.length > 0)
        paragraphs[paragraphs.length - 1] = styles.paragraphs.has(valOf(attributes!) ?? '');
    } else if (FIELD_MARKS.has(name!) && runs.length > 0) runs[runs.length - 1]!.field = true;
    if (selfClosed) continue;
    names.push(name!);
    if (name === 'w:p') paragraphs.push(false);
    else if (name === 'w:r')
      runs.push({ start: tag.index, paragraph: paragraphs[paragraphs.length - 1] ?? false });
  }
  if (drop.length === 0) return { xml, hidden: 0 };
  let out = '';
  let from = 0;
  let hidden = 0;
  for (const [start, end] of drop.sort((a, b) => a[0] - b[0])) {
    if (start < from) continue; // inside a hidden run taken out already
    out += xml.slice(from, start);
    from = end;
    hidden++;
  }
  return { xml: out + xml.slice(from), hidden };
}
