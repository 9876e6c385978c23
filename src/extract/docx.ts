/**
 * DOCX extraction: mammoth for the body, our own ZIP/XML helpers for everything around it.
 *
 * Why mammoth and a walk over its HTML (not our own document.xml walker): mammoth already resolves what is
 * hard to get right in WordprocessingML: heading styles by id and name, list nesting from numbering.xml,
 * tables, footnotes/endnotes, text boxes (w:txbxContent, incl. mc:AlternateContent), tracked changes
 * (w:del and deleted paragraph marks are dropped, w:ins is kept) and Strict OOXML namespaces. Its HTML is
 * regular XHTML (escaped text, self-closed void elements), so we parse it with the same safe XML parser and
 * walk the element tree into blocks; no regular expressions over markup.
 *
 * Safety: mammoth opens ZIPs itself (JSZip, no size limits) and parses XML with xmldom. So it never sees the
 * original file: we read the parts through openZip (declared sizes, ratios and actual inflated bytes are
 * capped), strip DOCTYPEs and undeclared entities from every XML part, drop binary parts (media, embedded
 * objects) and hand mammoth a small uncompressed package built from the cleaned parts. Images are counted,
 * never read. Embedded objects (word/embeddings) are counted and noted, never opened. An altChunk (content
 * imported in a format of its own) is read into paragraphs first (docx-altchunk.ts); one that is a Word document
 * is extracted as one, one level deep, its ZIP within what is left of the outer document's inflate limit. A
 * package mammoth stops on (a damaged part, a reference to what is not there) is repaired as far as it can be, with
 * warnings naming what was left out (docx-mammoth.ts); damaged headers, footers and relationships are warnings too.
 *
 * Decisions: comments are not text (mammoth drops them unless mapped; they are review notes, not content). Hidden
 * text (w:vanish) is left out, as Word shows and prints the document (docx-hidden.ts; metadata.hiddenRuns counts it).
 * Headers and footers are metadata (repeated page furniture, not body text). Logical pages change only at
 * explicit page breaks (w:br w:type="page"). The Title style becomes a 'title' block; heading 7-9 (which Word
 * has, HTML has not) become level 6. Tables of contents and of figures are navigation, not text (NAVIGATION_STYLES).
 */

import { ErrorCodes, FileError, isCorruptFile } from '../errors.js';
import { DocumentBuilder } from './document-builder.js';
import {
  type AltChunkDocumentReader,
  type AltChunkPart,
  altChunksAsParagraphs,
  documentParagraphs,
} from './docx-altchunk.js';
import {
  BODY_TEXT_STYLE_ID,
  type DrawingTexts,
  isOff,
  OUTLINE_STYLE_IDS,
  rewriteForMammoth,
} from './docx-compat.js';
import { type HiddenStyles, withoutHiddenRuns } from './docx-hidden.js';
import { type CleanParts, mammothHtml } from './docx-mammoth.js';
import { readNumbering, withNumberLabels } from './docx-numbering.js';
import { inheritedFrom, type ParagraphStyle, readStyles, type WordStyles } from './docx-styles.js';
import { chartTexts, smartArtTexts } from './drawingml-text.js';
import {
  officeDocumentPart,
  type Relationship,
  readCoreProperties,
  readRelationships,
  relsPathOf,
} from './office-metadata.js';
import { checkFileSize, sniffFormat } from './sniff.js';
import type { ExtractedDocument, ExtractOptions, PageInfo } from './types.js';
import { child, children, descendants, parseXml, sanitizeXml, type XmlElement, type XmlNode } from './xml.js';
import { openZip, type ZipArchive } from './zip.js';

/**
 * Tables of contents and of figures (Word's field results in the styles "toc 1"-"toc 9", "table of figures", under a
 * "TOC Heading"; LibreOffice's "Contents 1"-"Contents 10" and "Contents Heading"): navigation, not content. Their
 * lines repeat the headings with page numbers ("1.2 Grundlagen 5"), and a search for a heading's words found the
 * table of contents beside the section. First in the map: a TOC heading is based on "heading 1" (headingStyles).
 */
const NAVIGATION_STYLES = [
  ...Array.from({ length: 9 }, (_, i) => `toc ${i + 1}`),
  ...Array.from({ length: 10 }, (_, i) => `Contents ${i + 1}`),
  'TOC Heading',
  'Contents Heading',
  'table of figures',
];

const STYLE_MAP = [
  ...NAVIGATION_STYLES.map((name) => `p[style-name='${name}'] => !`),
  "p[style-name='Title'] => h1.cpe-title:fresh",
  "p[style-name='Titel'] => h1.cpe-title:fresh",
  ...[1, 2, 3, 4, 5, 6].map((n) => `p[style-name='Überschrift ${n}'] => h${n}:fresh`),
  ...[7, 8, 9].flatMap((n) => [
    `p[style-name='heading ${n}'] => h6:fresh`,
    `p[style-name='Heading ${n}'] => h6:fresh`,
    `p[style-name='Überschrift ${n}'] => h6:fresh`,
  ]),
  // a paragraph's own outline level (docx-compat.ts gives it as a style)
  ...OUTLINE_STYLE_IDS.map((id, i) => `p.${id} => h${Math.min(i + 1, 6)}:fresh`),
  `p.${BODY_TEXT_STYLE_ID} => p:fresh`,
  "br[type='page'] => hr.cpe-page-break",
  // a column break separates text as a line break does (mammoth drops it otherwise: "Vor SpalteNach Spalte")
  "br[type='column'] => br",
];

const utf8 = new TextEncoder();

/** The main part of a Word package by its usual name, read when the package relationships name none. */
const DOCUMENT_PART = 'word/document.xml';

interface MainPart {
  /** the part the package relationships name (office-metadata.ts officeDocumentPart), else DOCUMENT_PART */
  mainPart: string;
  /** the package relationships; none when damaged (a warning) */
  packageRelationships: ReadonlyMap<string, Relationship>;
}

/** The package's main part, whatever its name (word/document2.xml, as Word Online saves it), and its relationships. */
function mainPartOf(zip: ZipArchive, file: string, warnings: string[]): MainPart {
  const packageRelationships = relationshipsOf(zip, '', file, warnings);
  return { mainPart: officeDocumentPart(zip, packageRelationships) ?? DOCUMENT_PART, packageRelationships };
}

/**
 * Where mammoth looks when a package has no relationship for a part (a package without .rels still opens); the main
 * part and its relationships are read as well.
 */
const DEFAULT_PARTS = [
  '[content_types].xml',
  'word/styles.xml',
  'word/numbering.xml',
  'word/footnotes.xml',
  'word/endnotes.xml',
  'word/comments.xml',
];

/**
 * The parts reachable by relationships from the package (`packageRelationships`), as Word finds them, with their .rels
 * parts (lower case): an XML part nothing refers to is never read (a package of hundreds of such parts was inflated,
 * decoded and cleaned whole, ~3x its size in memory). The package relationships themselves are not among them: mammoth
 * is given its own (docx-mammoth.ts).
 */
function reachableParts(
  zip: ZipArchive,
  mainPart: string,
  packageRelationships: ReadonlyMap<string, Relationship>,
  file: string,
  warnings: string[],
): Set<string> {
  const parts = new Set([...DEFAULT_PARTS, mainPart.toLowerCase(), relsPathOf(mainPart).toLowerCase()]);
  const pending: string[] = [];
  const follow = (relationships: ReadonlyMap<string, Relationship>): void => {
    for (const rel of relationships.values()) {
      const key = rel.target.toLowerCase();
      if (rel.external || parts.has(key)) continue;
      parts.add(key);
      pending.push(rel.target);
    }
  };
  follow(packageRelationships);
  while (pending.length > 0) {
    const part = pending.pop()!;
    const relsPath = relsPathOf(part);
    if (!zip.has(relsPath)) continue;
    parts.add(relsPath.toLowerCase());
    follow(relationshipsOf(zip, part, file, warnings));
  }
  return parts;
}

/**
 * A part's relationships; none when its .rels part is damaged, with a warning naming it (once): what it links
 * (styles, notes, images, altChunks) is then not read, the body still is.
 */
function relationshipsOf(
  zip: ZipArchive,
  part: string,
  file: string,
  warnings: string[],
): Map<string, Relationship> {
  try {
    return readRelationships(zip, part, file);
  } catch (error) {
    if (!isCorruptFile(error)) throw error;
    const warning = `${relsPathOf(part)} not read: ${error.reason}`;
    if (!warnings.includes(warning)) warnings.push(warning);
    return new Map();
  }
}

/** Style names that are headings already for mammoth or STYLE_MAP (built-in "heading 1", "Überschrift 1", ...). */
const KNOWN_HEADING = /^(?:heading|überschrift) [1-9]$|^(?:title|titel)$/i;

/**
 * Style map lines for the paragraph styles that are headings without a heading's name: a style with an outline
 * level (w:outlineLvl 0-8: "Kapitel" set up as level 1), or one based on a heading style ("Abschnitt" based on
 * "heading 2") — mammoth maps styles by their exact names only, so their paragraphs were body text.
 */
function headingStyles(styles: ReadonlyMap<string, ParagraphStyle>): string[] {
  const levelOf = (style: ParagraphStyle): number | undefined => {
    const named = /^(?:heading|überschrift) ([1-9])$/i.exec(style.name ?? '');
    if (named) return Number(named[1]);
    return style.outline === undefined ? undefined : style.outline + 1;
  };
  const lines: string[] = [];
  for (const [id, { name }] of styles) {
    if (!name || KNOWN_HEADING.test(name) || name.includes("'")) continue;
    const level = inheritedFrom(styles, id, levelOf);
    if (level !== undefined) lines.push(`p[style-name='${name}'] => h${Math.min(level, 6)}:fresh`);
  }
  return lines;
}

/**
 * The texts of the SmartArt and chart parts a part's drawings refer to (mammoth reads neither): SmartArt nodes,
 * a chart's title, series and categories. A part that cannot be read gives none (its drawing stays a drawing).
 */
function drawingTexts(zip: ZipArchive, rels: ReadonlyMap<string, Relationship>, file: string): DrawingTexts {
  return (id, kind) => {
    const target = packagePart(zip, rels, id);
    if (target === undefined) return undefined;
    try {
      const root = parseXml(sanitizeXml(zip.readText(target)), file, target);
      return kind === 'diagram' ? smartArtTexts(root) : chartTexts(root);
    } catch {
      return undefined;
    }
  };
}

/** The parts the document part's altChunks name (read whole, within the archive's limits). */
function altChunkParts(zip: ZipArchive, rels: ReadonlyMap<string, Relationship>): AltChunkPart {
  return (id) => {
    const target = packagePart(zip, rels, id);
    return target === undefined ? undefined : { bytes: zip.readBytes(target), name: target };
  };
}

/** The part a relationship id names, when it is one of the package's own (not external) and there. */
function packagePart(
  zip: ZipArchive,
  rels: ReadonlyMap<string, Relationship>,
  id: string,
): string | undefined {
  const rel = rels.get(id);
  return rel && !rel.external && zip.has(rel.target) ? rel.target : undefined;
}

/** How deep altChunks that are Word documents are read: those of the document, not those inside them. */
const MAX_ALTCHUNK_NESTING = 1;

/** What a Word document is read with: its limits, how deep it is nested, what its embedded documents inflated. */
interface Reading {
  file: string;
  options: ExtractOptions;
  /** 0 for the file itself, 1 for a Word document in one of its altChunks */
  nesting: number;
  /** bytes the Word documents of its altChunks inflated (they count against its maxUnzippedBytes) */
  nestedInflated: number;
}

/**
 * The parts mammoth may need, cleaned and stored uncompressed; binary and unreachable parts stay behind, and so do
 * hidden runs (counted in `hiddenRuns`). Warnings of the altChunks that could not be read go to `warnings`.
 */
async function buildCleanPackage(
  zip: ZipArchive,
  { mainPart, packageRelationships }: MainPart,
  reading: Reading,
  styles: WordStyles,
  warnings: string[],
): Promise<{ files: CleanParts; hiddenRuns: number }> {
  const { file } = reading;
  const reachable = reachableParts(zip, mainPart, packageRelationships, file, warnings);
  const numbering = readNumbering(zip, file, styles.paragraphs);
  const files: CleanParts = {};
  let hiddenRuns = 0;
  for (const name of zip.names()) {
    const lower = name.toLowerCase();
    if (!lower.endsWith('.xml') && !lower.endsWith('.rels')) continue;
    if (lower.startsWith('word/embeddings/') || lower.startsWith('customxml/')) continue;
    if (!reachable.has(lower)) continue;
    let clean = sanitizeXml(zip.readText(name));
    if (!lower.endsWith('.rels')) {
      const shown = withoutHiddenRuns(clean, styles.hidden);
      clean = shown.xml;
      hiddenRuns += shown.hidden;
    }
    const main = lower === mainPart.toLowerCase();
    const rels = main ? relationshipsOf(zip, name, file, warnings) : undefined;
    if (rels) {
      const nested = nestedReader(zip, reading, warnings);
      const chunks = await altChunksAsParagraphs(clean, altChunkParts(zip, rels), nested);
      clean = chunks.xml;
      warnings.push(...chunks.warnings);
    }
    if (main && numbering) clean = withNumberLabels(clean, numbering);
    const documentPart = rels ? { drawingTexts: drawingTexts(zip, rels, file) } : undefined;
    files[name] = [
      utf8.encode(lower.endsWith('.rels') ? clean : rewriteForMammoth(clean, documentPart)),
      { level: 0 },
    ];
  }
  return { files, hiddenRuns };
}

/**
 * Extracts a Word document in an altChunk, within what is left of the outer document's inflate limit; its warnings
 * go to the outer document's `warnings`, named by its part. undefined below MAX_ALTCHUNK_NESTING; a document that
 * cannot be read throws its reason.
 */
function nestedReader(zip: ZipArchive, outer: Reading, warnings: string[]): AltChunkDocumentReader {
  return async (bytes, name) => {
    if (outer.nesting >= MAX_ALTCHUNK_NESTING) return undefined;
    const left = outer.options.maxUnzippedBytes - zip.inflatedBytes - outer.nestedInflated;
    const reading: Reading = {
      file: `${outer.file} (altChunk ${name})`,
      options: { ...outer.options, maxUnzippedBytes: Math.max(0, left) },
      nesting: outer.nesting + 1,
      nestedInflated: 0,
    };
    try {
      const { doc, inflatedBytes } = await readDocx(bytes, reading);
      outer.nestedInflated += inflatedBytes;
      warnings.push(...doc.warnings.map((warning) => `altChunk ${name}: ${warning}`));
      return documentParagraphs(doc);
    } catch (error) {
      // the reason alone: the altChunk's warning names the part
      throw error instanceof FileError && error.file === reading.file ? new Error(error.reason) : error;
    }
  };
}

const isHeading = (name: string): number | undefined => {
  const match = /^h([1-6])$/.exec(name);
  return match ? Number(match[1]) : undefined;
};

const collapse = (text: string): string => text.replace(/\s+/g, ' ').trim();

/** Walks mammoth's HTML tree into DocumentBuilder blocks. */
class HtmlWalker {
  private page: PageInfo;
  private pageCount = 1;
  /** footnote/endnote id -> the label shown at the reference ("[1]") */
  private readonly noteLabels = new Map<string, string>();

  constructor(
    private readonly builder: DocumentBuilder,
    private readonly maxPages: number,
    private readonly file: string,
  ) {
    this.page = builder.startPage(1, { images: 0, tables: 0 });
  }

  get pages(): number {
    return this.pageCount;
  }

  private newPage(): void {
    this.pageCount++;
    if (this.pageCount > this.maxPages) {
      throw new FileError(ErrorCodes.TOO_MANY_PAGES, this.file, `more than ${this.maxPages} pages`);
    }
    this.page = this.builder.startPage(this.pageCount, { images: 0, tables: 0 });
  }

  private count(key: 'images' | 'tables'): void {
    this.page.metadata[key] = ((this.page.metadata[key] as number) ?? 0) + 1;
  }

  blocks(nodes: XmlNode[]): void {
    for (const node of nodes) {
      if (typeof node === 'string') {
        this.builder.add('paragraph', node);
        continue;
      }
      const level = isHeading(node.name);
      if (level !== undefined) {
        const isTitle = (node.attrs.class ?? '').split(' ').includes('cpe-title');
        this.inlineBlock(node, isTitle ? 'title' : 'heading', level);
      } else if (node.name === 'ul' || node.name === 'ol') {
        this.list(node, 0);
      } else if (node.name === 'table') {
        this.table(node);
      } else if (node.name === 'hr') {
        this.newPage();
      } else {
        this.inlineBlock(node, 'paragraph');
      }
    }
  }

  /**
   * A paragraph-like element; a page break inside it splits the text there. A heading (or title) stays one: the
   * breaks before its text start its page, those after it start pages after it, and a break inside its text is a
   * space ("Kapitel 2", a page break, "Einleitung" is one heading, not an empty section and another).
   */
  private inlineBlock(
    element: XmlElement,
    type: 'title' | 'heading' | 'paragraph' | 'list_item' | 'footnote',
    level?: number,
  ): void {
    let text = '';
    const whole = type === 'heading' || type === 'title';
    /** a heading's page breaks after its first text, taken once it is added */
    let breaksAfter = 0;
    const flush = (): void => {
      this.builder.add(type, text, level);
      text = '';
    };
    const walk = (node: XmlNode): void => {
      if (typeof node === 'string') {
        text += node;
        return;
      }
      if (node.name === 'hr') {
        if (whole && text.trim() !== '') {
          if (!/\s$/.test(text)) text += ' ';
          breaksAfter++;
          return;
        }
        flush();
        this.newPage();
        return;
      }
      // walk() appends the element's children to `text` itself; only the element's own text comes back
      const own = this.inlineElement(node, walk);
      text += own;
    };
    for (const node of element.children) walk(node);
    flush();
    for (let i = 0; i < breaksAfter; i++) this.newPage();
  }

  /** Inline markup; returns text to append (children are walked through `walk`). */
  private inlineElement(node: XmlElement, walk: (node: XmlNode) => void): string {
    if (node.name === 'br') return '\n';
    if (node.name === 'img') {
      this.count('images');
      return altText(node);
    }
    if (node.name === 'a') {
      const href = node.attrs.href ?? '';
      // the "↑" back link mammoth appends to each note
      if (/^#(footnote|endnote)-ref-/.test(href)) return '';
      this.noteReference(node);
    }
    for (const inner of node.children) walk(inner);
    return '';
  }

  private list(element: XmlElement, depth: number): void {
    for (const item of children(element, 'li')) {
      const id = item.attrs.id ?? '';
      if (/^(footnote|endnote)-/.test(id)) {
        this.note(item, id);
        continue;
      }
      // text of the item without its nested lists, then the nested lists one level deeper
      const own: XmlNode[] = [];
      const nested: XmlElement[] = [];
      for (const node of item.children) {
        if (typeof node !== 'string' && (node.name === 'ul' || node.name === 'ol')) nested.push(node);
        else own.push(node);
      }
      const paragraphs = own.filter((n): n is XmlElement => typeof n !== 'string' && n.name === 'p');
      if (paragraphs.length > 0 && paragraphs.length === own.filter((n) => typeof n !== 'string').length) {
        for (const p of paragraphs) this.inlineBlock(p, 'list_item', depth);
      } else {
        this.inlineBlock({ ...item, children: own }, 'list_item', depth);
      }
      for (const list of nested) this.list(list, depth + 1);
    }
  }

  private note(item: XmlElement, id: string): void {
    const label = this.noteLabels.get(id);
    const parts: string[] = [];
    for (const node of item.children) {
      if (typeof node === 'string') parts.push(node);
      else parts.push(this.noteText(node));
    }
    const text = parts
      .map((p) => p.trim())
      .filter(Boolean)
      .join('\n');
    this.builder.add('footnote', label ? `${label} ${text}` : text);
  }

  private noteText(element: XmlElement): string {
    if (element.name === 'a' && /^#(footnote|endnote)-ref-/.test(element.attrs.href ?? '')) return '';
    if (element.name === 'br') return '\n';
    if (element.name === 'img') {
      this.count('images');
      return '';
    }
    let text = '';
    for (const node of element.children) text += typeof node === 'string' ? node : this.noteText(node);
    return element.name === 'p' || element.name === 'li' ? `${text}\n` : text;
  }

  /** A footnote or endnote reference (`<a id="footnote-ref-2">[2]</a>`): its label, for the note's text. */
  private noteReference(node: XmlElement): void {
    const ref = /^(footnote|endnote)-ref-(.+)$/.exec(node.attrs.id ?? '');
    if (ref) this.noteLabels.set(`${ref[1]}-${ref[2]}`, collapse(plainText(node)));
  }

  /**
   * A table as rows of cells separated by " | ". A cell merged over rows or columns (mammoth's rowspan and colspan)
   * leaves empty cells where it spans, so that every value stays under its column ("| 2 | Rollen verteilen" under
   * "Phase | Schritt | Inhalt"), as the PPTX reader does.
   */
  private table(element: XmlElement): void {
    this.count('tables');
    const rows: string[] = [];
    /** per column: rows below still covered by a cell above */
    const covered: number[] = [];
    for (const row of tableRows(element)) {
      const cells = children(row).filter((cell) => cell.name === 'td' || cell.name === 'th');
      this.images(row);
      for (const a of descendants(row, 'a')) this.noteReference(a);
      const texts: string[] = [];
      const skipCovered = () => {
        while ((covered[texts.length] ?? 0) > 0) {
          covered[texts.length]!--;
          texts.push('');
        }
      };
      for (const cell of cells) {
        skipCovered();
        const rowspan = span(cell.attrs.rowspan, MAX_ROWSPAN);
        const colspan = span(cell.attrs.colspan, MAX_COLSPAN);
        for (let k = 0; k < colspan; k++) {
          if (rowspan > 1) covered[texts.length] = rowspan - 1;
          texts.push(k === 0 ? collapse(cellText(cell)) : '');
        }
      }
      skipCovered();
      for (let column = texts.length; column < covered.length; column++)
        if ((covered[column] ?? 0) > 0) covered[column]!--;
      // trailing empty cells are layout (unused columns), not content
      while (texts.length > 0 && texts[texts.length - 1] === '') texts.pop();
      if (texts.some((t) => t !== '')) rows.push(texts.join(' | '));
    }
    this.builder.add('table', rows.join('\n'));
  }

  private images(element: XmlElement): void {
    for (const _img of descendants(element, 'img')) this.count('images');
  }
}

/** Word tables have at most 63 columns; a span is read as a whole number between 1 and its limit. */
const MAX_COLSPAN = 63;
const MAX_ROWSPAN = 100_000;
const span = (value: string | undefined, max: number): number => {
  const n = Number.parseInt(value ?? '1', 10);
  return Number.isFinite(n) ? Math.min(max, Math.max(1, n)) : 1;
};

/** Rows of this table only (directly or in thead/tbody/tfoot); nested tables stay inside their cells. */
function tableRows(table: XmlElement): XmlElement[] {
  const rows: XmlElement[] = [];
  for (const node of children(table)) {
    if (node.name === 'tr') rows.push(node);
    else if (node.name === 'thead' || node.name === 'tbody' || node.name === 'tfoot')
      rows.push(...children(node, 'tr'));
  }
  return rows;
}

function plainText(element: XmlElement): string {
  let text = '';
  for (const node of element.children) text += typeof node === 'string' ? node : plainText(node);
  return text;
}

/** Elements whose text stands apart from its neighbours' in a cell (paragraphs, headings, items, breaks). */
const CELL_SEPARATED = new Set(['p', 'li', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

/** An image's description (alt text: what it shows, in words) as text, " [Bild: …] "; '' without one. */
const altText = (img: XmlElement): string => {
  const alt = (img.attrs.alt ?? '').replace(/\s+/g, ' ').trim();
  return alt ? ` [Bild: ${alt}] ` : '';
};

/**
 * Cell text: paragraphs and list items separated by spaces. A nested table keeps its shape with its own
 * separators ("a; b / c; d"), so its cells are not mistaken for columns of the outer row.
 */
function cellText(element: XmlElement): string {
  let text = '';
  for (const node of element.children) {
    if (typeof node === 'string') text += node;
    else if (node.name === 'table') text += ` ${nestedTableText(node)} `;
    else if (CELL_SEPARATED.has(node.name)) text += ` ${cellText(node)} `;
    else if (node.name === 'img') text += altText(node);
    else if (node.name === 'a' && /^#(footnote|endnote)-ref-/.test(node.attrs.href ?? '')) continue;
    else text += cellText(node);
  }
  return text;
}

function nestedTableText(table: XmlElement): string {
  return tableRows(table)
    .map((row) =>
      children(row)
        .filter((cell) => cell.name === 'td' || cell.name === 'th')
        .map((cell) => collapse(cellText(cell)))
        .join('; '),
    )
    .join(' / ');
}

/**
 * Text of a header/footer part: paragraphs on lines, tabs kept (w:ptab too), a non-breaking hyphen as one, as the
 * body reads them. Not read: hidden text (docx-hidden.ts), deleted or moved-away text (w:del, w:delText,
 * w:moveFrom), a content control showing its prompt, and a text box's fallback copy (mc:Fallback: Word writes the
 * box twice, as DrawingML and as VML).
 */
function partText(zip: ZipArchive, name: string, file: string, hidden: HiddenStyles): string {
  const root = parseXml(withoutHiddenRuns(zip.readText(name), hidden).xml, file, name);
  const lines: string[] = [];
  for (const paragraph of headerParagraphs(root)) {
    // paragraphs of a text box inside the header are reached on their own
    let line = '';
    const stack: XmlNode[] = [...paragraph.children].reverse();
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (typeof node === 'string' || SKIPPED_IN_HEADER.has(node.local) || showsPrompt(node)) continue;
      if (node.local === 't') line += plainText(node);
      else if (node.local === 'tab' || node.local === 'ptab') line += '\t';
      else if (node.local === 'br' || node.local === 'cr') line += '\n';
      else if (node.local === 'noBreakHyphen') line += '\u2011';
      else for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
    }
    if (line.trim()) lines.push(line.trim());
  }
  return lines.join('\n');
}

/** Inside a header paragraph: elements whose text is not shown, or is reached as a paragraph of its own. */
const SKIPPED_IN_HEADER = new Set(['p', 'del', 'moveFrom', 'txbxContent', 'Fallback']);

/** A content control (w:sdt) showing its placeholder prompt instead of content. */
function showsPrompt(node: XmlElement): boolean {
  if (node.local !== 'sdt') return false;
  const shown = child(child(node, 'sdtPr'), 'showingPlcHdr');
  if (shown === undefined) return false;
  return !isOff(Object.entries(shown.attrs).find(([key]) => key === 'val' || key.endsWith(':val'))?.[1]);
}

/** The paragraphs of a header or footer part in document order, not those of a text box's fallback copy. */
function headerParagraphs(root: XmlElement): XmlElement[] {
  const found: XmlElement[] = [];
  const stack: XmlNode[] = [...root.children].reverse();
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (typeof node === 'string' || node.local === 'Fallback' || showsPrompt(node)) continue;
    if (node.local === 'p') found.push(node);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push(node.children[i]!);
  }
  return found;
}

const partNumber = (name: string): number => Number(/(\d+)\.xml$/i.exec(name)?.[1] ?? 0);

/**
 * The texts of the header or footer parts, each once. A damaged one (malformed XML, a wrong checksum) is left out
 * with a warning: page furniture is metadata, and the body is still there to read, as Word's repair would.
 */
function headersAndFooters(
  zip: ZipArchive,
  file: string,
  kind: 'header' | 'footer',
  hidden: HiddenStyles,
  warnings: string[],
): string[] {
  const pattern = new RegExp(`^word/${kind}\\d*\\.xml$`, 'i');
  const texts: string[] = [];
  for (const name of zip
    .names()
    .filter((n) => pattern.test(n))
    .sort((a, b) => partNumber(a) - partNumber(b))) {
    let text: string;
    try {
      text = partText(zip, name, file, hidden);
    } catch (error) {
      if (!isCorruptFile(error)) throw error;
      warnings.push(`${kind} ${name} not read: ${error.reason}`);
      continue;
    }
    if (text && !texts.includes(text)) texts.push(text);
  }
  return texts;
}

export async function extractDocx(
  bytes: Uint8Array,
  file: string,
  options: ExtractOptions,
): Promise<ExtractedDocument> {
  return (await readDocx(bytes, { file, options, nesting: 0, nestedInflated: 0 })).doc;
}

/** A Word document's extraction, and the bytes its ZIP and those of its altChunks inflated. */
async function readDocx(
  bytes: Uint8Array,
  reading: Reading,
): Promise<{ doc: ExtractedDocument; inflatedBytes: number }> {
  const { file, options } = reading;
  checkFileSize(file, bytes.length, options.maxFileBytes);
  sniffFormat(bytes, 'docx', file);
  const zip = openZip(bytes, file, options);
  const styles = readStyles(zip, file);
  const warnings: string[] = [];
  const main = mainPartOf(zip, file, warnings);
  const { files: parts, hiddenRuns } = await buildCleanPackage(zip, main, reading, styles, warnings);
  const styleMap = [...STYLE_MAP, ...headingStyles(styles.paragraphs)];
  const html = await mammothHtml(parts, main.mainPart, styleMap, file, warnings);

  const builder = new DocumentBuilder('docx');
  const walker = new HtmlWalker(builder, options.maxPages, file);
  walker.blocks(parseXml(`<html>${html}</html>`, file, 'mammoth HTML').children);
  builder.warnings.push(...warnings);

  const embedded = zip.names().filter((n) => /^word\/embeddings\/[^/]+$/i.test(n));
  if (embedded.length > 0) {
    builder.warnings.push(`${embedded.length} embedded object(s) not extracted`);
  }
  const metadata: Record<string, unknown> = {
    ...readCoreProperties(zip, file),
    headers: headersAndFooters(zip, file, 'header', styles.hidden, builder.warnings),
    footers: headersAndFooters(zip, file, 'footer', styles.hidden, builder.warnings),
    embeddedObjects: embedded.length,
    hiddenRuns,
    pageCount: walker.pages,
  };
  return { doc: builder.build(metadata), inflatedBytes: zip.inflatedBytes + reading.nestedInflated };
}
