/**
 * w:altChunk: content another program put into a Word document in a format of its own (HTML, MHT, plain text,
 * RTF, another DOCX), which Word converts when it opens the document. Mammoth skips it, text and all. Each is read
 * here into paragraphs, headings as headings (OUTLINE_STYLE_IDS): HTML and MHT (the HTML of its first text/html
 * part) by their h1-h6, RTF (rtf.ts) by outline level, a Word document by extracting it as one, through the reader
 * the caller gives (docx.ts: one level deep, within the outer document's limits). An altChunk in a format not read
 * here stays as it is; mammoth then reports it as an ignored element, and extractDocx warns that its text is not
 * extracted.
 */
import { OUTLINE_STYLE_IDS, textElement } from './docx-compat.js';
import { isRtf, paragraphText, rtfParagraphs, type TextParagraph } from './rtf.js';
import { decodeByByteOrderMark, decodeText } from './txt.js';
import type { ExtractedDocument } from './types.js';
import { decodeEntities, PREDEFINED_ENTITIES } from './xml.js';

/** A part's bytes and content type by the relationship id an altChunk names; undefined when it has none. */
export type AltChunkPart = (relationshipId: string) => { bytes: Uint8Array; name: string } | undefined;

/**
 * Reads an altChunk that is a Word document into paragraphs; undefined when the caller reads none (nested too
 * deeply). A document that cannot be read throws, with the reason.
 */
export type AltChunkDocumentReader = (
  bytes: Uint8Array,
  name: string,
) => Promise<TextParagraph[] | undefined>;

/** an altChunk, self-closed or with its properties; an element left open is not read past the next one */
const ALT_CHUNK =
  /<w:altChunk(?=[\s/>])((?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(?:\/>|>(?:(?!<w:altChunk\b)[\s\S])*?<\/w:altChunk\s*>)/g;
const RELATIONSHIP_ID = /\sr:id\s*=\s*(?:"([^"]*)"|'([^']*)')/;

/**
 * The document part with each altChunk it can read replaced by its paragraphs, and a warning for each that could
 * not be read (a damaged or nested embedded document; its element is dropped, with the reason).
 */
export async function altChunksAsParagraphs(
  xml: string,
  part: AltChunkPart,
  readDocument?: AltChunkDocumentReader,
): Promise<{ xml: string; warnings: string[] }> {
  const warnings: string[] = [];
  if (!xml.includes('<w:altChunk')) return { xml, warnings };
  let out = '';
  let from = 0;
  for (const match of xml.matchAll(ALT_CHUNK)) {
    out += xml.slice(from, match.index);
    from = match.index + match[0].length;
    const idMatch = RELATIONSHIP_ID.exec(match[1] ?? '');
    const id = idMatch ? (idMatch[1] ?? idMatch[2]) : undefined;
    const found = id === undefined ? undefined : part(id);
    let paragraphs: TextParagraph[] | undefined;
    try {
      paragraphs = found && (await chunkParagraphs(found.bytes, found.name, readDocument));
    } catch (error) {
      warnings.push(
        `altChunk ${found?.name} not read: ${error instanceof Error ? error.message : String(error)}`,
      );
      continue;
    }
    out += paragraphs ? paragraphsXml(paragraphs) : match[0];
  }
  return { xml: out + xml.slice(from), warnings };
}

const paragraphsXml = (paragraphs: TextParagraph[]): string =>
  paragraphs
    .map(({ text, heading }) => {
      const style = heading ? `<w:pPr><w:pStyle w:val="${OUTLINE_STYLE_IDS[heading - 1]}"/></w:pPr>` : '';
      return `<w:p>${style}<w:r>${textElement(text)}</w:r></w:p>`;
    })
    .join('');

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];

/**
 * The paragraphs of an altChunk part, by its content (RTF, a ZIP package) or else its name; undefined for a format
 * not read here.
 */
async function chunkParagraphs(
  bytes: Uint8Array,
  name: string,
  readDocument: AltChunkDocumentReader | undefined,
): Promise<TextParagraph[] | undefined> {
  if (isRtf(bytes)) return rtfParagraphs(bytes);
  if (ZIP_MAGIC.every((byte, i) => bytes[i] === byte)) {
    if (!readDocument) return undefined;
    const paragraphs = await readDocument(bytes, name);
    if (!paragraphs) throw new Error('a Word document inside an embedded one is not read');
    return paragraphs;
  }
  const extension = /\.([a-z0-9]+)$/i.exec(name)?.[1]?.toLowerCase();
  if (extension === 'htm' || extension === 'html' || extension === 'xhtml')
    return htmlParagraphs(decodeHtml(bytes));
  if (extension === 'mht' || extension === 'mhtml') {
    const html = mhtHtml(bytes);
    return html === undefined ? undefined : htmlParagraphs(html);
  }
  if (extension === 'txt') {
    return decodeText(bytes)
      .text.split(/\r?\n\s*\r?\n/)
      .map((text) => ({ text: text.replace(/\s+/g, ' ').trim() }))
      .filter((p) => p.text !== '');
  }
  return undefined;
}

/**
 * An extracted document as altChunk paragraphs: headings and titles with their levels, every other block by its
 * lines (a table's rows, a list's items).
 */
export function documentParagraphs(doc: ExtractedDocument): TextParagraph[] {
  const paragraphs: TextParagraph[] = [];
  for (const block of doc.blocks) {
    const text = doc.text.slice(block.start, block.end);
    if (block.type === 'heading' || block.type === 'title') {
      const value = text.replace(/\s+/g, ' ').trim();
      if (value) paragraphs.push({ text: value, heading: Math.min(Math.max(block.level ?? 1, 1), 6) });
      continue;
    }
    for (const line of text.split('\n')) {
      const value = line.replace(/\s+/g, ' ').trim();
      if (value) paragraphs.push({ text: value });
    }
  }
  return paragraphs;
}

/**
 * HTML bytes as text, as a browser decodes them: by a byte order mark, else the charset the caller knows (an MHT
 * part's header) or the meta element names (a meta element naming UTF-16, which its own ASCII bytes contradict,
 * means UTF-8), else detected (UTF-8, Windows-1252).
 */
function decodeHtml(bytes: Uint8Array, charset?: string): string {
  const marked = decodeByByteOrderMark(bytes);
  if (marked) return marked.text;
  const head = new TextDecoder('latin1').decode(bytes.subarray(0, 2048));
  const meta = /<meta[^>]+charset\s*=\s*["']?([\w-]+)/i.exec(head)?.[1];
  const named = charset ?? (meta && /^utf-?16/i.test(meta) ? undefined : meta);
  if (named && !/^utf-?8$/i.test(named)) {
    try {
      return new TextDecoder(named).decode(bytes);
    } catch {
      // a charset TextDecoder does not know: detected instead
    }
  }
  return decodeText(bytes).text;
}

/**
 * The HTML of an MHT (MIME HTML) part: its first text/html part, quoted-printable or base64 decoded, in the charset
 * that part names. undefined when it has none.
 */
function mhtHtml(bytes: Uint8Array): string | undefined {
  const raw = new TextDecoder('latin1').decode(bytes);
  const boundary = /boundary\s*=\s*"?([^"\r\n;]+)"?/i.exec(raw)?.[1];
  const parts = boundary ? raw.split(`--${boundary}`) : [raw];
  for (const section of parts) {
    const split = /\r?\n\r?\n/.exec(section);
    if (!split) continue;
    const headers = section.slice(0, split.index);
    if (!/content-type:\s*text\/html/i.test(headers)) continue;
    const body = section.slice(split.index + split[0].length);
    const encoding = /content-transfer-encoding:\s*([\w-]+)/i.exec(headers)?.[1]?.toLowerCase();
    const charset = /charset\s*=\s*"?([\w-]+)/i.exec(headers)?.[1];
    const decoded =
      encoding === 'base64'
        ? new Uint8Array(Buffer.from(body.replace(/\s+/g, ''), 'base64'))
        : encoding === 'quoted-printable'
          ? quotedPrintable(body)
          : Uint8Array.from(body, (c) => c.charCodeAt(0) & 0xff);
    return decodeHtml(decoded, charset);
  }
  return undefined;
}

/** Quoted-printable (RFC 2045) to bytes: soft line breaks dropped, =XX decoded. */
function quotedPrintable(text: string): Uint8Array {
  const joined = text.replace(/=\r?\n/g, '');
  const out: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const hex = joined[i] === '=' ? joined.slice(i + 1, i + 3) : '';
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      out.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      out.push(joined.charCodeAt(i) & 0xff);
    }
  }
  return Uint8Array.from(out);
}

/** Elements whose start or end ends a paragraph. */
const BLOCK = new Set(
  (
    'p div br li tr table ul ol dl dt dd blockquote pre hr section article header footer h1 h2 h3 h4 h5 h6 body ' +
    'caption figcaption'
  ).split(' '),
);
const CELL = new Set(['td', 'th']);
/**
 * a start or end tag, a ">" in a quoted attribute value inside it; it never reaches past the next "<", so a tag or
 * a quote left open costs one scan to there
 */
const TAG = /<(\/?)([a-zA-Z][a-zA-Z0-9]*)\b(?:[^<>"']|"[^"<]*"|'[^'<]*')*>/g;

const HIDDEN_START = /<!--|<(script|style|title)\b/gi;
/** the end tags of the hidden elements, found in the HTML as written (lower-casing can change its length: "İ") */
const HIDDEN_END: Readonly<Record<string, RegExp>> = {
  script: /<\/script/gi,
  style: /<\/style/gi,
  title: /<\/title/gi,
};

/** Where `pattern` (global) next matches in `text` from `from`; -1 for nowhere. */
function indexOfPattern(text: string, pattern: RegExp, from: number): number {
  pattern.lastIndex = from;
  return pattern.exec(text)?.index ?? -1;
}

/**
 * The HTML without what a browser does not show: comments, and script, style and title elements (the rest of a
 * head has no text: meta, link and base are empty, and a head left open, as HTML allows, hides nothing). One left
 * open runs to the end, as in a browser; each is found with one forward search (no pattern that backtracks).
 */
function shownHtml(html: string): string {
  let out = '';
  let from = 0;
  HIDDEN_START.lastIndex = 0;
  for (let start = HIDDEN_START.exec(html); start; start = HIDDEN_START.exec(html)) {
    out += html.slice(from, start.index);
    const element = start[1]?.toLowerCase();
    const searchFrom = start.index + start[0].length;
    const end = element
      ? indexOfPattern(html, HIDDEN_END[element]!, searchFrom)
      : html.indexOf('-->', searchFrom);
    if (end < 0) return out;
    const after = element ? html.indexOf('>', end) : end + 2;
    from = after < 0 ? html.length : after + 1;
    HIDDEN_START.lastIndex = from;
  }
  return out + html.slice(from);
}

/** HTML as paragraphs: text between block elements, white space collapsed, table cells joined by " | ". */
function htmlParagraphs(html: string): TextParagraph[] {
  const body = shownHtml(html);
  const paragraphs: TextParagraph[] = [];
  let text = '';
  let heading: number | undefined;
  const flush = () => {
    const value = paragraphText(decodeEntities(text, HTML_ENTITIES, true));
    if (value !== '') paragraphs.push(heading ? { text: value, heading } : { text: value });
    text = '';
    heading = undefined;
  };
  let from = 0;
  TAG.lastIndex = 0;
  for (let tag = TAG.exec(body); tag; tag = TAG.exec(body)) {
    text += body.slice(from, tag.index);
    from = tag.index + tag[0].length;
    const name = tag[2]!.toLowerCase();
    if (CELL.has(name)) {
      if (tag[1]) text += ' | ';
      continue;
    }
    if (!BLOCK.has(name)) continue;
    flush();
    const level = /^h([1-6])$/.exec(name)?.[1];
    if (level && !tag[1]) heading = Number(level);
  }
  text += body.slice(from);
  flush();
  return paragraphs;
}

/** The named character references German HTML uses most, beside XML's five; others stay as written. */
const HTML_ENTITIES: Readonly<Record<string, string>> = {
  ...PREDEFINED_ENTITIES,
  nbsp: ' ',
  auml: 'ä',
  ouml: 'ö',
  uuml: 'ü',
  Auml: 'Ä',
  Ouml: 'Ö',
  Uuml: 'Ü',
  szlig: 'ß',
  euro: '€',
  ndash: '–',
  mdash: '—',
  bdquo: '„',
  ldquo: '“',
  rdquo: '”',
  sbquo: '‚',
  lsquo: '‘',
  rsquo: '’',
  laquo: '«',
  raquo: '»',
  hellip: '…',
  sect: '§',
  para: '¶',
  deg: '°',
  middot: '·',
  bull: '•',
  copy: '©',
  reg: '®',
  shy: '\u00ad',
  eacute: 'é',
  egrave: 'è',
  agrave: 'à',
};
