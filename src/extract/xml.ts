/**
 * Safe XML parsing for Office parts, on fast-xml-parser in preserveOrder mode (document order of runs and
 * paragraphs matters; the default object mode groups equal siblings and loses it).
 *
 * Safety: a DOCTYPE (with its internal subset) is cut out before parsing, so no entity is ever declared, let
 * alone resolved (no external entities, no "billion laughs"). Entity decoding is ours, not the parser's: the
 * five predefined entities and numeric character references are decoded, any other `&name;` can only refer to
 * a declaration we removed and is dropped. Office XML never needs a DTD.
 */
import { XMLParser } from 'fast-xml-parser';
import { ErrorCodes, FileError } from '../errors.js';

export type XmlNode = XmlElement | string;

export interface XmlElement {
  /** qualified name as written, e.g. "w:p" */
  name: string;
  /** name without prefix, e.g. "p" (Strict and Transitional OOXML use the same local names) */
  local: string;
  attrs: Record<string, string>;
  children: XmlNode[];
}

/** deeper nesting than this is not a real Office document; guards the recursive walkers against fuzzed input */
export const MAX_XML_DEPTH = 512;

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  trimValues: false,
  parseTagValue: false,
  parseAttributeValue: false,
  processEntities: false,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  cdataPropName: '#cdata',
  // the parser's own guard (default 100) is too tight for nested tables and groups in real documents
  maxNestedTags: MAX_XML_DEPTH,
});

/** Finds the end of a `<!DOCTYPE ...>` starting at `start`, skipping quoted strings, comments and the [ ] subset. */
function doctypeEnd(xml: string, start: number): number {
  let depth = 0;
  let quote = '';
  for (let i = start + 9; i < xml.length; i++) {
    const c = xml[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '<' && xml.startsWith('<!--', i)) {
      const close = xml.indexOf('-->', i + 4);
      if (close < 0) return xml.length;
      i = close + 2;
    } else if (c === '[') {
      depth++;
    } else if (c === ']') {
      depth = Math.max(0, depth - 1);
    } else if (c === '>' && depth === 0) {
      return i + 1;
    }
  }
  return xml.length;
}

const ENTITY = /&(#x[0-9a-fA-F]+|#[0-9]+|[A-Za-z_][\w.-]*);/g;
export const PREDEFINED_ENTITIES: Readonly<Record<string, string>> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
};

/**
 * Decodes numeric entities and the named ones in `names` (XML's predefined five by default); drops references to
 * other names (undeclared, i.e. removed, entities), or keeps them as written with `keepUnknown` (HTML).
 *
 * A supplementary character written as two references to its UTF-16 halves (`&#55357;&#56832;`, as Java
 * serializers write emoji) is joined into one character; a lone half is no character and is dropped.
 */
export function decodeEntities(
  text: string,
  names: Readonly<Record<string, string>> = PREDEFINED_ENTITIES,
  keepUnknown = false,
): string {
  if (!text.includes('&')) return text;
  // end of the low-half reference already joined to the high half before it
  let joinedUntil = -1;
  return text.replace(ENTITY, (match, ref: string, offset: number) => {
    if (offset < joinedUntil) return '';
    if (ref.startsWith('#')) {
      const code = numericReference(ref);
      const pair = surrogatePair(text, code, offset + match.length);
      if (pair) {
        joinedUntil = offset + match.length + pair.length;
        return pair.char;
      }
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff)
        ? String.fromCodePoint(code)
        : '';
    }
    if (Object.hasOwn(names, ref)) return names[ref]!;
    return keepUnknown ? match : '';
  });
}

/** a numeric character reference right at lastIndex (sticky: no copy of the text behind a high half) */
const LOW_HALF_REFERENCE = /&(#x[0-9a-fA-F]+|#[0-9]+);/y;

/** The code a numeric reference ("#123", "#x7B") names. */
const numericReference = (ref: string): number =>
  ref[1] === 'x' || ref[1] === 'X' ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);

/**
 * The character that a high half `high` makes with a reference to a low half starting at `at` in `text`, and that
 * reference's length; undefined when `high` is no high half or no low half follows it.
 */
function surrogatePair(text: string, high: number, at: number): { char: string; length: number } | undefined {
  if (!(high >= 0xd800 && high <= 0xdbff)) return undefined;
  LOW_HALF_REFERENCE.lastIndex = at;
  const low = LOW_HALF_REFERENCE.exec(text);
  const code = low ? numericReference(low[1]!) : Number.NaN;
  if (!(low && code >= 0xdc00 && code <= 0xdfff)) return undefined;
  return {
    char: String.fromCodePoint(0x10000 + ((high - 0xd800) << 10) + (code - 0xdc00)),
    length: low[0].length,
  };
}

/**
 * Removes every DOCTYPE declaration and every reference to a non-predefined entity, leaving otherwise
 * identical XML. Also used to clean parts before mammoth's own XML reader sees them.
 */
export function sanitizeXml(xml: string): string {
  // entity references first: a removed one cannot join the text around it into a DOCTYPE the pass below misses
  const text = xml.replace(/&([A-Za-z_][\w.-]*);/g, (match, name: string) =>
    Object.hasOwn(PREDEFINED_ENTITIES, name) ? match : '',
  );
  // one pass over the text (a search from the start after each removal took minutes for 40,000 DOCTYPEs)
  const doctype = /<!DOCTYPE/gi;
  let out = '';
  let from = 0;
  for (let match = doctype.exec(text); match; match = doctype.exec(text)) {
    out += text.slice(from, match.index);
    // what precedes could join what follows into a new "<!DOCTYPE" ("<!DOC" + removed + "TYPE"): a space between
    if (DOCTYPE_PREFIX.test(out)) out += ' ';
    from = doctypeEnd(text, match.index);
    doctype.lastIndex = from;
  }
  return from === 0 ? text : out + text.slice(from);
}

/** text ending with the start of "<!DOCTYPE" */
const DOCTYPE_PREFIX = /<(?:!(?:D(?:O(?:C(?:T(?:Y(?:P)?)?)?)?)?)?)?$/i;

type RawNode = Record<string, unknown>;

function convert(raw: RawNode[], depth: number, file: string, part: string): XmlNode[] {
  if (depth > MAX_XML_DEPTH) {
    throw new FileError(ErrorCodes.CORRUPT_FILE, file, `XML part ${part} is nested too deeply`);
  }
  const nodes: XmlNode[] = [];
  for (const item of raw) {
    for (const key of Object.keys(item)) {
      if (key === ':@') continue;
      const value = item[key];
      if (key === '#text') {
        nodes.push(decodeEntities(String(value)));
      } else if (key === '#cdata') {
        for (const inner of value as RawNode[])
          if (typeof inner['#text'] === 'string') nodes.push(inner['#text']);
      } else {
        const rawAttrs = (item[':@'] ?? {}) as Record<string, unknown>;
        const attrs: Record<string, string> = {};
        for (const [name, attrValue] of Object.entries(rawAttrs))
          attrs[name] = decodeEntities(String(attrValue));
        const colon = key.indexOf(':');
        nodes.push({
          name: key,
          local: colon >= 0 ? key.slice(colon + 1) : key,
          attrs,
          children: Array.isArray(value) ? convert(value as RawNode[], depth + 1, file, part) : [],
        });
      }
    }
  }
  return nodes;
}

/** Parses one XML part; malformed XML or a part without a root element is CORRUPT_FILE naming the part. */
export function parseXml(xml: string, file: string, part: string): XmlElement {
  let raw: RawNode[];
  try {
    raw = parser.parse(sanitizeXml(xml)) as RawNode[];
  } catch (error) {
    const nested = /nested/i.test((error as Error).message ?? '');
    const reason = nested ? `XML part ${part} is nested too deeply` : `malformed XML in ${part}`;
    throw new FileError(ErrorCodes.CORRUPT_FILE, file, reason, { cause: error });
  }
  const root = convert(raw, 0, file, part).find((node): node is XmlElement => typeof node !== 'string');
  if (!root) throw new FileError(ErrorCodes.CORRUPT_FILE, file, `XML part ${part} has no root element`);
  return root;
}

export const isElement = (node: XmlNode): node is XmlElement => typeof node !== 'string';

/** Child elements, optionally only those with the given local name. */
export function children(element: XmlElement, local?: string): XmlElement[] {
  return element.children.filter(
    (node): node is XmlElement => typeof node !== 'string' && (local === undefined || node.local === local),
  );
}

export function child(element: XmlElement | undefined, local: string): XmlElement | undefined {
  if (!element) return undefined;
  for (const node of element.children) if (typeof node !== 'string' && node.local === local) return node;
  return undefined;
}

/** First element reached by following local names, e.g. path(sp, 'nvSpPr', 'nvPr', 'ph'). */
export function path(element: XmlElement | undefined, ...locals: string[]): XmlElement | undefined {
  let current = element;
  for (const local of locals) current = child(current, local);
  return current;
}

/** All descendant elements with this local name, in document order (iterative: no stack growth). */
export function descendants(element: XmlElement, local: string): XmlElement[] {
  const found: XmlElement[] = [];
  const stack: XmlNode[] = [...element.children].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (typeof node === 'string') continue;
    if (node.local === local) found.push(node);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
  return found;
}

/** Attribute by local name ("r:id" matches "id" only when no unprefixed "id" exists). */
export function attr(element: XmlElement | undefined, local: string): string | undefined {
  if (!element) return undefined;
  if (local in element.attrs) return element.attrs[local];
  for (const [name, value] of Object.entries(element.attrs)) {
    if (name.endsWith(`:${local}`)) return value;
  }
  return undefined;
}

/** A prefixed attribute by local name, e.g. prefixedAttr(sldId, 'id') for r:id next to a plain id. */
export function prefixedAttr(element: XmlElement | undefined, local: string): string | undefined {
  if (!element) return undefined;
  for (const [name, value] of Object.entries(element.attrs)) {
    if (name.endsWith(`:${local}`)) return value;
  }
  return undefined;
}

/** Concatenated character data of the element and its descendants. */
export function textContent(element: XmlElement): string {
  let text = '';
  const stack: XmlNode[] = [element];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (typeof node === 'string') text += node;
    else for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
  return text;
}
