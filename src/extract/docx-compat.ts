/**
 * WordprocessingML that mammoth (1.x) does not read, rewritten into what it does, before it sees a part. Without
 * this its text is dropped with nothing but a mammoth warning: Word writes caption numbers ("Abbildung 1") and
 * merge fields as w:fldSimple, line breaks as w:cr, right-to-left runs in w:dir / w:bdo, formulas in m:oMath.
 *
 * - w:fldSimple, w:dir, w:bdo, m:oMathPara: the element goes, its content stays (their runs are ordinary runs);
 * - w:cr: a w:br (a line break);
 * - m:oMath: one run with the formula's text (its m:t texts in order: "E=mc²", "a2+b2=c2"; the layout of
 *   fractions and exponents is lost, the symbols are kept).
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
const MATH_START = tags('m:oMath');
const MATH_TEXT = /<m:t(?=[\s>])(?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*>([^<]*)<\/m:t\s*>/g;

/** The part with the elements above rewritten; a part without any comes back as it was. */
export function rewriteForMammoth(xml: string): string {
  if (
    !xml.includes('<w:fldSimple') &&
    !xml.includes('<w:cr') &&
    !xml.includes('<w:dir') &&
    !xml.includes('<w:bdo') &&
    !xml.includes('<m:oMath')
  )
    return xml;
  let out = xml;
  for (const pattern of UNWRAPPED) out = out.replace(pattern, '');
  out = out.replace(CARRIAGE_RETURN, '<w:br/>');
  return out.includes('<m:oMath') ? mathAsRuns(out) : out;
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
