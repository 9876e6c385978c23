/**
 * Mammoth over a clean package (docx.ts), and a damaged package read as far as it can be. Mammoth throws on what it
 * does not find or cannot parse, and the whole document is lost with a reason in its own words ("Cannot read
 * properties of null (reading 'type')"). So:
 *
 * - before it runs: references that nothing in the package defines are taken away (notes no notes part holds,
 *   hyperlinks and images the body's relationships do not list), so are entries of the content types and
 *   relationships without the attributes mammoth reads, and an empty styles part is put in where there is none
 *   (mammoth's styles then have no table styles, and a table naming one stops it); the package relationships name
 *   the main part cpe found (packageRelationships);
 * - when it fails: a strict check of each part names the damaged ones. The body (the main part, word/document.xml by
 *   its usual name) damaged is the file's error, naming the part and the line; any other damaged part is repaired as far as it can be (what is
 *   intact of a list of relationships or content types, an empty part else) and the package read again, with a
 *   warning naming it, as Word's repair would;
 * - when it still fails, with no part damaged or with the damaged ones repaired: the body once more without its
 *   notes, hyperlinks and images.
 *
 * String work over tags of fixed names, each found with an anchored pattern: one pass per rewrite.
 */
import { XMLValidator } from 'fast-xml-parser';
import { zipSync } from 'fflate';
import mammoth from 'mammoth';
import { ErrorCodes, FileError } from '../errors.js';
import { relsPathOf } from './office-metadata.js';

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** A clean package's parts by name, as fflate zips them (stored, not compressed). */
export type CleanParts = Record<string, [Uint8Array, { level: 0 }]>;

/**
 * The HTML of a clean package whose main part (the body) is `mainPart`: mammoth's, with what it reports as errors and
 * the elements it skipped (after docx-compat.ts, what is left; once each) in `warnings`. A package mammoth cannot read
 * is repaired as above; what cannot be read at all is a CORRUPT_FILE error of `file`.
 */
export async function mammothHtml(
  parts: CleanParts,
  mainPart: string,
  styleMap: string[],
  file: string,
  warnings: string[],
): Promise<string> {
  const prepared = readable(parts, mainPart);
  let result: MammothResult;
  try {
    result = await convertToHtml(prepared, styleMap);
  } catch (error) {
    result = await convertWithoutDamagedParts(prepared, mainPart, styleMap, file, error, warnings);
  }
  const skipped = new Set<string>();
  for (const message of result.messages) {
    if (message.type === 'error') warnings.push(message.message);
    else if (message.message.startsWith('An unrecognised element was ignored')) skipped.add(message.message);
  }
  for (const message of skipped) warnings.push(`${message}: its text is not extracted`);
  return result.value;
}

/**
 * The package with what stops mammoth though it is well-formed taken away or put in (above): a styles part where
 * there is none, entries of lists without the attributes mammoth reads, references to what nothing defines; and
 * package relationships that name `mainPart`.
 */
function readable(parts: CleanParts, mainPart: string): CleanParts {
  const out = { ...parts };
  for (const name of Object.keys(out)) if (name.toLowerCase() === PACKAGE_RELATIONSHIPS) delete out[name];
  out[PACKAGE_RELATIONSHIPS] = [utf8.encode(packageRelationships(mainPart)), { level: 0 }];
  if (!Object.keys(out).some((name) => name.toLowerCase() === 'word/styles.xml'))
    out['word/styles.xml'] = [utf8.encode(emptyWordPart('w:styles')), { level: 0 }];
  withCompleteListEntries(out);
  withoutDanglingReferences(out, mainPart);
  return out;
}

const PACKAGE_RELATIONSHIPS = '_rels/.rels';
const OFFICE_DOCUMENT = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument';

/**
 * Package relationships with one entry: the main part cpe found (office-metadata.ts officeDocumentPart), by its name
 * in the ZIP. Mammoth reads nothing else of them, follows only the transitional type of the relationship (not Strict
 * OOXML's) and reads word/document.xml without one: so it reads the part cpe cleaned, whatever its name
 * (word/document2.xml, as Word Online saves it), and a damaged list of the package's relationships cannot stop it.
 */
function packageRelationships(mainPart: string): string {
  const target = `/${mainPart}`.replace(/[&<"]/g, (c) =>
    c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&quot;',
  );
  return `<Relationships xmlns="${RELATIONSHIPS_NS}"><Relationship Id="rId1" Type="${OFFICE_DOCUMENT}" Target="${target}"/></Relationships>`;
}

/** The attributes mammoth reads of each entry of a list of content types or relationships, without a check. */
const attributePattern = (name: string) => new RegExp(`\\s${name}\\s*=`);
const REQUIRED_ATTRIBUTES: Readonly<Record<string, readonly RegExp[]>> = {
  Default: ['Extension', 'ContentType'].map(attributePattern),
  Override: ['PartName', 'ContentType'].map(attributePattern),
  Relationship: ['Id', 'Target'].map(attributePattern),
};
/** a self-closed entry of a list of content types or relationships */
const LIST_ENTRY =
  /<(Default|Override|Relationship)(?=[\s/>])((?:\s+[^\s=/<>]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*\/>/g;

/**
 * The content types and relationships without entries that lack an attribute mammoth reads ("PartName", "Target"):
 * it calls a string method on the missing value ("Cannot read properties of undefined (reading 'charAt')").
 */
function withCompleteListEntries(parts: CleanParts): void {
  for (const [name, [bytes]] of Object.entries(parts)) {
    const lower = name.toLowerCase();
    if (lower !== '[content_types].xml' && !lower.endsWith('.rels')) continue;
    const xml = utf8Decoder.decode(bytes);
    const complete = xml.replace(LIST_ENTRY, (entry, element: string, attributes: string) =>
      (REQUIRED_ATTRIBUTES[element] ?? []).every((pattern) => pattern.test(attributes)) ? entry : '',
    );
    if (complete !== xml) parts[name] = [utf8.encode(complete), { level: 0 }];
  }
}

/**
 * The document part (`mainPart`) without references that would stop mammoth because nothing in the package defines
 * what they name: notes no notes part holds, hyperlinks and images its relationships do not list; with `keepNone`,
 * without any of them.
 */
function withoutDanglingReferences(parts: CleanParts, mainPart: string, { keepNone = false } = {}): void {
  const documentName = Object.keys(parts).find((name) => name.toLowerCase() === mainPart.toLowerCase());
  if (documentName === undefined) return;
  const relationshipsName = relsPathOf(documentName).toLowerCase();
  const notes = new Set<string>();
  let relationships = new Set<string>();
  for (const [name, [bytes]] of Object.entries(parts)) {
    if (name === documentName) continue;
    const lower = name.toLowerCase();
    if (lower === relationshipsName) {
      relationships = new Set(relationshipIds(utf8Decoder.decode(bytes)));
    } else if (!lower.endsWith('.rels')) {
      const xml = utf8Decoder.decode(bytes);
      if (NOTES_ROOT.test(xml)) for (const id of noteIds(xml)) notes.add(id);
    }
  }
  if (keepNone) {
    notes.clear();
    relationships.clear();
  }
  const xml = utf8Decoder.decode(parts[documentName]![0]);
  const kept = withoutDanglingRelationshipIds(withoutDanglingNoteReferences(xml, notes), relationships);
  if (kept !== xml) parts[documentName] = [utf8.encode(kept), { level: 0 }];
}

/**
 * The validator's complaint in words, with its line. It reports elements left open at the end as a JSON list
 * ("Invalid '[    \"w:document\",    \"w:body\"]' found."): named here as such.
 */
function validatorReason(err: { code: string; msg: string; line: number }): string {
  const open = err.code === 'InvalidXml' && /^Invalid '\[([\s\S]*)\]' found\.$/.exec(err.msg);
  if (open) return `elements left open at the end: ${open[1]!.replace(/[\s"]+/g, '')}`;
  return `${err.msg.replace(/\s+/g, ' ')} (line ${err.line})`;
}

/**
 * The last try after mammoth failed on well-formed (or repaired) parts: the body without its note references,
 * hyperlinks' and images' relationships (what mammoth follows into other parts, where it stops on what it does not
 * find: notes in an unknown namespace, say), with a warning; `failure` when that fails too.
 */
async function convertBodyOnly(
  parts: CleanParts,
  mainPart: string,
  styleMap: string[],
  failure: FileError,
  warnings: string[],
): Promise<MammothResult> {
  const bodyOnly = { ...parts };
  withoutDanglingReferences(bodyOnly, mainPart, { keepNone: true });
  try {
    const result = await convertToHtml(bodyOnly, styleMap);
    // the reason in mammoth's words, behind what it means for the document
    const mammothSaid = failure.reason.replace(/^cannot read Word document: /, '');
    warnings.push(
      `notes, hyperlinks and images not read: the body alone could be read (mammoth: ${mammothSaid})`,
    );
    return result;
  } catch {
    throw failure;
  }
}

type MammothResult = Awaited<ReturnType<typeof mammoth.convertToHtml>>;

function convertToHtml(parts: CleanParts, styleMap: string[]): Promise<MammothResult> {
  const zipped = zipSync(parts);
  return mammoth.convertToHtml(
    { buffer: Buffer.from(zipped.buffer, zipped.byteOffset, zipped.byteLength) },
    {
      styleMap,
      includeEmbeddedStyleMap: false,
      externalFileAccess: false,
      // count images, never read them (their bytes are not in the clean package)
      convertImage: mammoth.images.imgElement(async () => ({ src: '' })),
    },
  );
}

/**
 * After mammoth failed: the parts whose XML is not well-formed, by a strict check of each. When the body (`mainPart`:
 * the part without which there is no document to read; mammoth reads it without the package's content types and
 * relationships too, with no styles, numbering or notes then, as Word's repair would) is not among
 * them (styles, numbering, footnotes, comments, settings, relationships: what Word's repair would drop), the document
 * is read again with each of them repaired as far as it can be (repairedPart: what is intact of a list of
 * relationships, an empty part else), and each is a warning naming the part; otherwise the error names the damaged
 * part.
 */
async function convertWithoutDamagedParts(
  parts: CleanParts,
  mainPart: string,
  styleMap: string[],
  file: string,
  error: unknown,
  warnings: string[],
): Promise<MammothResult> {
  const damaged: Array<{ name: string; reason: string }> = [];
  for (const [name, [bytes]] of Object.entries(parts)) {
    const checked = XMLValidator.validate(utf8Decoder.decode(bytes));
    if (checked !== true) damaged.push({ name, reason: validatorReason(checked.err) });
  }
  const fail = (reason: string) =>
    new FileError(ErrorCodes.CORRUPT_FILE, file, `cannot read Word document: ${reason}`, { cause: error });
  if (damaged.length === 0)
    return convertBodyOnly(parts, mainPart, styleMap, fail(mammothReason(error)), warnings);
  const body = damaged.find((part) => part.name.toLowerCase() === mainPart.toLowerCase());
  const first = body ?? damaged[0]!;
  const malformed = `malformed XML in ${first.name}: ${first.reason}`;
  if (body) throw fail(malformed);
  const rest = { ...parts };
  for (const part of damaged) {
    const repaired = repairedPart(part.name, utf8Decoder.decode(rest[part.name]![0]));
    if (repaired === undefined) delete rest[part.name];
    else rest[part.name] = [utf8.encode(repaired), { level: 0 }];
  }
  const repaired = readable(rest, mainPart);
  let result: MammothResult;
  try {
    result = await convertToHtml(repaired, styleMap);
  } catch (second) {
    // damage the strict check passed (mammoth's reader is stricter in places), or none of XML at all: the last try
    const without = `without ${damaged.length === 1 ? 'it' : 'them'}: ${mammothReason(second)}`;
    result = await convertBodyOnly(repaired, mainPart, styleMap, fail(`${malformed}; ${without}`), warnings);
  }
  for (const part of damaged) {
    // a .rels part found damaged before is named once
    if (!warnings.some((warning) => warning.startsWith(`${part.name} not read`)))
      warnings.push(`${part.name} not read: malformed XML (${part.reason})`);
  }
  return result;
}

/**
 * What mammoth's failure means, in words: its XML reader (xmldom) reports malformed XML as
 * "warning: [xmldom warning]\tunclosed xml attribute\n@#[line:undefined,col:undefined]", and a part nested
 * deeper than its recursive reader can go as a stack overflow.
 */
function mammothReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof RangeError && /call stack/i.test(message))
    return `a part is nested too deeply (more than its reader can follow)`;
  const xmldom = /\[xmldom (?:warning|error|fatalError)\]\s*([^\n@]*)/.exec(message);
  if (xmldom) return `malformed XML in a part of the document (${xmldom[1]!.trim() || 'not well-formed'})`;
  return message.replace(/\s+/g, ' ').trim();
}

/**
 * a footnote or endnote reference and its id, self-closed or empty (with the document part's `w:` prefix: a
 * reference written with another one is not matched, so it is kept)
 */
const NOTE_REFERENCE =
  /<w:(footnote|endnote)Reference(?=[\s/>])[^>]*?\sw:id\s*=\s*(?:"([^"]*)"|'([^']*)')[^>]*?(?:\/>|>\s*<\/w:\1Reference\s*>)/g;
/** the root of a notes part, with whatever prefix its writer gave WordprocessingML */
const NOTES_ROOT = /<(?:[\w.-]+:)?(?:footnotes|endnotes)[\s>]/;
/** a footnote or endnote of a notes part, with its id, in either quotes and with any prefix */
const NOTE =
  /<(?:[\w.-]+:)?(footnote|endnote)(?=[\s>])[^>]*?\s(?:[\w.-]+:)?id\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/** The notes a footnotes or endnotes part defines, as "footnote:1", "endnote:2". */
function noteIds(xml: string): string[] {
  return [...xml.matchAll(NOTE)].map((match) => `${match[1]}:${match[2] ?? match[3]}`);
}

/**
 * The document part without its references to notes that no part defines (`defined`, as noteIds gives them): a
 * reference to a missing note, from a damaged or dropped notes part, stops mammoth ("Cannot read properties of null
 * (reading 'type')"), and a note that is not there has no text to show.
 */
function withoutDanglingNoteReferences(xml: string, defined: ReadonlySet<string>): string {
  if (!xml.includes('Reference')) return xml;
  return xml.replace(NOTE_REFERENCE, (reference, kind: string, double?: string, single?: string) =>
    defined.has(`${kind}:${double ?? single}`) ? reference : '',
  );
}

/** a start tag of an element mammoth follows a relationship from: a hyperlink, an image (DrawingML, VML) */
const LINKING_TAG = /<(?:w:hyperlink|a:blip|v:imagedata)(?=[\s/>])[^>]*>/g;
const RELATIONSHIP_ATTRIBUTE = /\sr:(?:id|embed|link)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
const RELATIONSHIP_ID_ATTRIBUTE = /<Relationship(?=[\s/>])[^>]*?\sId\s*=\s*(?:"([^"]*)"|'([^']*)')/g;

/** The ids a list of relationships (a .rels part) defines. */
function relationshipIds(rels: string): string[] {
  return [...rels.matchAll(RELATIONSHIP_ID_ATTRIBUTE)].map((match) => (match[1] ?? match[2]) as string);
}

/**
 * The document part with the relationship ids of hyperlinks and images that its relationships do not define taken
 * away (a hyperlink keeps its text; an image that is not there is left out, its description with it): mammoth stops
 * on one ("Cannot read properties of undefined (reading 'replace')"), as from a damaged or missing relationships
 * part.
 */
function withoutDanglingRelationshipIds(xml: string, defined: ReadonlySet<string>): string {
  return xml.replace(LINKING_TAG, (tag) =>
    tag.replace(RELATIONSHIP_ATTRIBUTE, (attribute, double?: string, single?: string) =>
      defined.has((double ?? single)!) ? attribute : '',
    ),
  );
}

const RELATIONSHIPS_NS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const CONTENT_TYPES_NS = 'http://schemas.openxmlformats.org/package/2006/content-types';
const MAIN_NS = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
/** an entry of a list of relationships or content types: self-closed, every attribute in quotes */
const RELATIONSHIP_ENTRY = /<Relationship(?:\s+[^\s=/<>]+\s*=\s*"[^"<]*")*\s*\/>/g;
const CONTENT_TYPE_ENTRY = /<(?:Default|Override)(?:\s+[^\s=/<>]+\s*=\s*"[^"<]*")*\s*\/>/g;
const WORD_ROOT = /<(w:[A-Za-z]+)[\s/>]/;

/**
 * A damaged part as mammoth can read it, for a document read without what is damaged: a list of relationships or
 * content types keeps the entries that are intact; a WordprocessingML part (styles, numbering, notes, settings) is
 * empty, with its root element (mammoth fails on some missing parts: a table style looked up in no styles);
 * undefined for another part (leave it out).
 */
function repairedPart(name: string, xml: string): string | undefined {
  const intact = (entry: RegExp) =>
    (xml.match(entry) ?? []).filter((e) => XMLValidator.validate(e) === true).join('');
  if (name.toLowerCase().endsWith('.rels'))
    return `<Relationships xmlns="${RELATIONSHIPS_NS}">${intact(RELATIONSHIP_ENTRY)}</Relationships>`;
  if (name.toLowerCase() === '[content_types].xml')
    return `<Types xmlns="${CONTENT_TYPES_NS}">${intact(CONTENT_TYPE_ENTRY)}</Types>`;
  const root = WORD_ROOT.exec(xml)?.[1];
  return root === undefined ? undefined : emptyWordPart(root);
}

/** A WordprocessingML part with nothing in it but its root element ("w:styles"). */
const emptyWordPart = (root: string): string => `<${root} xmlns:w="${MAIN_NS}"/>`;
