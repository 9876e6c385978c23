/**
 * PDF extraction with pdf-parse 2.x (pdf.js inside).
 *
 * pdf-parse's PDFParse loads the document (its parameters, its exception classes) and reads the
 * document-level facts (info, XMP, outline, permissions). Its getText() flattens every page to a string, but
 * paragraphs, headings and page furniture need the position and size of each text run, and the image and
 * table marks need the page's operator list; so per page we work on the pdf.js document PDFParse has loaded
 * (pdfjs-dist is pinned to the exact version pdf-parse ships with).
 *
 * Text comes in content-stream order, which is the reading order the producer wrote (column by column for
 * LaTeX two-column papers); lines are grouped by baseline, with the runs of a line in x order (pdf-lines.ts:
 * formula editors, accents, indices, turned pages), paragraphs by vertical gaps, indentation and font size
 * changes. Unicode repairs for pdf.js's text content (µ kept, ZapfDingbats codes) are in pdf-unicode.ts, Wingdings glyphs in symbol-fonts.ts. Headings come from the outline (bookmarks) when its titles can be found on their pages, else
 * from conservative heuristics: a numbered short line ("1.2 Titel") or a short line in a clearly larger
 * font, standing alone.
 *
 * Safety: images are never decoded for text (they are only counted from the operator list, where pdf.js
 * skips images above maxImageSize pixels); eval is off; page counts are checked against pages that really
 * load (a /Count of 9999999999 proves nothing); page-tree cycles surface as a CORRUPT_FILE error. Memory and
 * time limits for content that is hostile anyway (a JBIG2 bomb as a content stream) are enforced by running
 * the whole extraction in a killable process (isolate.ts).
 *
 * Decision on permissions: a PDF whose owner forbids copying (copy:no) is still extracted: the permission
 * flags are advisory for viewers, the text goes into an internal index, not out to third parties. The flags
 * are recorded in metadata.permissions and a warning is added, so a stricter policy can act on them.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { LineStore, Line as PathLine, PDFParse, Point, Rectangle } from 'pdf-parse';
import { OPS, Util } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { PDFDocumentProxy, PDFPageProxy, TextItem } from 'pdfjs-dist/types/src/display/api.js';
import { CpeError, ErrorCodes, FileError } from '../errors.js';
import { DocumentBuilder } from './document-builder.js';
import { joinLineEndHyphenation, normalizeText } from './normalize.js';
import { removePageFurniture } from './pdf-furniture.js';
import { fontSizeOf, groupLines, type TextLine } from './pdf-lines.js';
import { compatibilityForms, dingbatsText, isDingbatsFont } from './pdf-unicode.js';
import { installPdfWorker, textErrorOf } from './pdf-worker.js';
import { type SymbolFont, symbolFontOf, symbolFontText } from './symbol-fonts.js';
import type { ExtractedDocument, ExtractOptions } from './types.js';

/** pixels; larger images are dropped by pdf.js before decoding (a 100000x100000 JBIG2 bomb never allocates) */
const MAX_IMAGE_PIXELS = 40_000_000;
/** images smaller than this (either side, in pixels) are bullets, rules and logos, not content for vision */
const MIN_IMAGE_SIDE = 48;
/** fewer letters than this on a page with an image: the page is a scan (its text needs OCR) */
const MIN_TEXT_LETTERS = 20;
/** consecutive pages that fail to load before we stop believing the page count */
const MAX_FAILED_PAGES = 20;
const MAX_OUTLINE_ITEMS = 5000;
const MAX_OUTLINE_DEPTH = 12;

const pdfjsRoot = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
const resource = (folder: string): string => `${join(pdfjsRoot, folder)}/`;

interface Paragraph {
  lines: TextLine[];
  size: number;
  bold: boolean;
  /** leftmost x of its lines */
  left: number;
  /** set when the outline or the heuristics make this paragraph a heading */
  heading?: number;
}

interface PageData {
  number: number;
  paragraphs: Paragraph[];
  metadata: Record<string, unknown>;
  /** why pdf.js stopped reading the page's text, when it did */
  textError?: string;
}

interface OutlineEntry {
  title: string;
  level: number;
  page?: number;
}

export async function extractPdf(
  bytes: Uint8Array,
  file: string,
  options: ExtractOptions,
): Promise<ExtractedDocument> {
  if (bytes.length === 0) throw new FileError(ErrorCodes.FILE_EMPTY, file, 'empty file');
  await installPdfWorker(); // keeps soft hyphens in the text (see pdf-worker.ts)
  const parser = new PDFParse({
    // pdf.js may take ownership of the buffer; the caller keeps its bytes
    data: bytes.slice(),
    standardFontDataUrl: resource('standard_fonts'),
    cMapUrl: resource('cmaps'),
    cMapPacked: true,
    wasmUrl: resource('wasm'),
    isEvalSupported: false,
    maxImageSize: MAX_IMAGE_PIXELS,
    stopAtErrors: false,
    useSystemFonts: false,
    disableFontFace: true,
    enableXfa: false,
    verbosity: 0,
  });
  try {
    const info = await parser.getInfo();
    const doc = loadedDocument(parser, file);
    const warnings: string[] = [];
    const pageCount = await countPages(doc, options.maxPages, file, warnings);
    const outline = await readOutline(doc, info.outline ?? [], warnings);
    const pages: PageData[] = [];
    let failedInARow = 0;
    for (let number = 1; number <= pageCount; number++) {
      let page: PDFPageProxy;
      try {
        page = await doc.getPage(number);
      } catch (error) {
        if (isFatal(error)) throw error;
        warnings.push(`page ${number}: cannot be loaded (${messageOf(error)})`);
        if (++failedInARow >= MAX_FAILED_PAGES) {
          warnings.push(`stopped after ${MAX_FAILED_PAGES} unreadable pages in a row`);
          break;
        }
        continue;
      }
      failedInARow = 0;
      pages.push(await readPage(page, warnings));
      page.cleanup();
    }
    if (pages.length === 0 && pageCount > 0) {
      throw new FileError(
        ErrorCodes.CORRUPT_FILE,
        file,
        `corrupt PDF: none of its pages can be read (${warnings[0]})`,
      );
    }
    refuseUnreadableText(pages, file);
    // running headers and footers out first: they are no headings, and a paragraph runs on over them
    const furniture = removePageFurniture(pages);
    // a header or footer glued to the text is taken out of its paragraph: the paragraph looks like the lines left
    for (const page of pages)
      for (const paragraph of page.paragraphs) {
        paragraph.size = paragraph.lines[0]!.size;
        paragraph.bold = paragraph.lines.every((line) => line.bold);
        paragraph.left = Math.min(...paragraph.lines.map((line) => line.x0));
      }
    markHeadings(pages, outline);
    return build(pages, info, outline, warnings, furniture);
  } catch (error) {
    throw pdfError(error, file, bytes);
  } finally {
    await parser.destroy().catch(() => undefined);
  }
}

/**
 * A PDF none of whose pages' text could be read, and no text out of it: a broken file (as a new version, it must
 * not replace a readable one with an empty text). A page that broke off after some text, or beside pages that
 * read, is a warning.
 */
function refuseUnreadableText(pages: readonly PageData[], file: string): void {
  const first = pages[0];
  if (first?.textError === undefined) return;
  if (pages.some((page) => page.textError === undefined || page.paragraphs.length > 0)) return;
  throw new FileError(
    ErrorCodes.CORRUPT_FILE,
    file,
    `corrupt PDF: the text of its pages cannot be read (page ${first.number}: ${first.textError})`,
  );
}

/** The pdf.js document PDFParse loaded in getInfo(); checked, so a pdf-parse upgrade cannot fail silently. */
function loadedDocument(parser: PDFParse, file: string): PDFDocumentProxy {
  const doc = (parser as unknown as { doc?: PDFDocumentProxy }).doc;
  if (!doc || typeof doc.getPage !== 'function') {
    throw new CpeError(ErrorCodes.STEP_FAILED, `${file}: pdf-parse did not expose the loaded document`);
  }
  return doc;
}

/**
 * The number of pages to read. pdf.js already walks the tree when /Count and the real pages disagree; above
 * the limit we still check that the page after the limit really exists before refusing the file.
 */
async function countPages(
  doc: PDFDocumentProxy,
  maxPages: number,
  file: string,
  warnings: string[],
): Promise<number> {
  const claimed = doc.numPages;
  if (claimed <= maxPages) return claimed;
  try {
    const page = await doc.getPage(maxPages + 1);
    page.cleanup();
  } catch (error) {
    if (isFatal(error)) throw error;
    warnings.push(`page count ${claimed} is not backed by real pages; reading at most ${maxPages}`);
    return maxPages;
  }
  throw new FileError(ErrorCodes.TOO_MANY_PAGES, file, `too many pages (${claimed}, limit ${maxPages})`, {
    details: { pages: claimed, limit: maxPages },
  });
}

/**
 * Errors that concern the whole document, not one page: a password, and a cycle in the page tree (the page
 * list itself cannot be trusted then, so partial text would hide a broken file).
 */
const isFatal = (error: unknown): boolean =>
  error instanceof FileError ||
  (error instanceof Error &&
    (error.name === 'PasswordException' || /circular reference/i.test(error.message)));

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * pdf.js / pdf-parse exceptions -> FileError with a reason a user can act on; `bytes` (the file) name the security
 * handler of an encryption pdf.js does not know.
 */
export function pdfError(error: unknown, file: string, bytes: Uint8Array): Error {
  if (error instanceof CpeError) return error;
  const name = error instanceof Error ? error.name : '';
  const message = messageOf(error);
  if (name === 'PasswordException') {
    return new FileError(ErrorCodes.PASSWORD_REQUIRED, file, 'password required', { cause: error });
  }
  if (
    /^(?:unknown encryption method|unsupported encryption algorithm|unknown crypto method)$/i.test(message)
  ) {
    return new FileError(
      ErrorCodes.ENCRYPTED_DOCUMENT,
      file,
      `encrypted PDF (${unsupportedEncryption(bytes)})`,
      {
        cause: error,
      },
    );
  }
  if (/file is empty|zero bytes/i.test(message)) {
    return new FileError(ErrorCodes.FILE_EMPTY, file, 'empty file', { cause: error });
  }
  if (/circular reference|cycle/i.test(message)) {
    return new FileError(
      ErrorCodes.CORRUPT_FILE,
      file,
      `corrupt PDF: page tree contains a cycle (${message})`,
      {
        cause: error,
      },
    );
  }
  if (error instanceof RangeError && /call stack/i.test(message)) {
    return new FileError(ErrorCodes.CORRUPT_FILE, file, 'corrupt PDF: structure nested too deeply', {
      cause: error,
    });
  }
  return new FileError(ErrorCodes.CORRUPT_FILE, file, `corrupt or truncated PDF (${message})`, {
    cause: error,
  });
}

/**
 * Which encryption pdf.js cannot open, in words: a security handler other than the Standard (password) one, named
 * by its encryption dictionary's /Filter (certificate security "Adobe.PubSec", a DRM plug-in's), or an algorithm
 * the Standard handler does not have. Read from the bytes as written: pdf.js does not say, and the encryption
 * dictionary is never in an object stream (PDF 32000 §7.5.7).
 */
function unsupportedEncryption(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  const reference = [...text.matchAll(/\/Encrypt\s*(?:(\d+)\s+(\d+)\s+R|<<)/g)].pop();
  let dictionary: string | undefined;
  if (reference?.[1] !== undefined) {
    const object = [
      ...text.matchAll(new RegExp(`(?<!\\d)${reference[1]}\\s+${reference[2]}\\s+obj`, 'g')),
    ].pop();
    dictionary = object && text.slice(object.index, object.index + ENCRYPTION_DICTIONARY_CHARS);
  } else if (reference) {
    dictionary = text.slice(reference.index, reference.index + ENCRYPTION_DICTIONARY_CHARS);
  }
  const handler = dictionary && /\/Filter\s*\/([^\s/<>[\]()%]+)/.exec(dictionary)?.[1];
  if (handler && handler !== 'Standard') return `security handler ${handler} is not supported`;
  return 'its encryption method is not supported';
}

/** how far into an encryption dictionary its /Filter is looked for */
const ENCRYPTION_DICTIONARY_CHARS = 4096;

async function readOutline(
  doc: PDFDocumentProxy,
  nodes: unknown[],
  warnings: string[],
): Promise<OutlineEntry[]> {
  const entries: OutlineEntry[] = [];
  const seen = new Set<unknown>();
  const walk = async (list: unknown[], level: number): Promise<void> => {
    for (const node of list) {
      if (entries.length >= MAX_OUTLINE_ITEMS || level > MAX_OUTLINE_DEPTH || seen.has(node)) return;
      seen.add(node);
      const item = node as { title?: unknown; dest?: unknown; items?: unknown };
      const title =
        typeof item.title === 'string' ? normalizeText(item.title).replace(/\s+/g, ' ').trim() : '';
      if (title !== '') entries.push({ title, level, page: await destinationPage(doc, item.dest) });
      if (Array.isArray(item.items)) await walk(item.items, level + 1);
    }
  };
  try {
    await walk(nodes, 1);
  } catch (error) {
    warnings.push(`outline partly unreadable (${messageOf(error)})`);
  }
  return entries;
}

async function destinationPage(doc: PDFDocumentProxy, dest: unknown): Promise<number | undefined> {
  try {
    const explicit = typeof dest === 'string' ? await doc.getDestination(dest) : dest;
    if (!Array.isArray(explicit) || explicit.length === 0) return undefined;
    const target = explicit[0] as unknown;
    if (typeof target === 'number') return target + 1;
    if (target && typeof target === 'object' && 'num' in target) {
      return (await doc.getPageIndex(target as { num: number; gen: number })) + 1;
    }
  } catch {
    // a broken destination only loses the page hint
  }
  return undefined;
}

async function readPage(page: PDFPageProxy, warnings: string[]): Promise<PageData> {
  const number = page.pageNumber;
  const [width, height] = [page.view[2]! - page.view[0]!, page.view[3]! - page.view[1]!];
  const metadata: Record<string, unknown> = { width: Math.round(width), height: Math.round(height) };
  if (page.rotate) metadata.rotation = page.rotate;
  let ops: { fnArray: number[]; argsArray: unknown[][] } | undefined;
  try {
    ops = await page.getOperatorList();
  } catch (error) {
    warnings.push(`page ${number}: drawing operations unreadable (${messageOf(error)})`);
  }
  let lines: TextLine[] = [];
  const items: TextItem[] = [];
  let textError: string | undefined;
  try {
    // pdf.js's own normalisation would also turn µ into μ (see pdf-unicode.ts)
    const content = await page.getTextContent({ disableNormalization: true });
    const font = fontFacts(page);
    for (const item of content.items) {
      if (!('str' in item)) continue;
      const error = textErrorOf(item);
      if (error !== undefined) {
        textError ??= error;
        continue;
      }
      const str = compatibilityForms(item.str);
      const { dingbats, symbols } = font(item.fontName);
      items.push({
        ...item,
        str: dingbats ? dingbatsText(str) : symbols ? symbolFontText(str, symbols) : str,
      });
    }
    lines = groupLines(items, (fontName) => font(fontName).bold);
    if (textError !== undefined) warnings.push(`page ${number}: text read up to an error (${textError})`);
  } catch (error) {
    textError = messageOf(error);
    warnings.push(`page ${number}: text unreadable (${textError})`);
  }
  if (ops) {
    metadata.images = countImages(ops);
    const tables = countRuledTables(ops, page, items);
    if (tables > 0) metadata.tables = tables;
  }
  // a scan with a line of text set on it (a page number, a Bates stamp: "Seite 1") has no text layer worth the name
  let letters = 0;
  for (const line of lines) letters += line.text.match(/\p{L}/gu)?.length ?? 0;
  if (letters < MIN_TEXT_LETTERS && ((metadata.images as number | undefined) ?? 0) > 0)
    metadata.ocrNeeded = true;
  return { number, paragraphs: groupParagraphs(lines), metadata, textError };
}

interface FontFacts {
  bold: boolean;
  /** a ZapfDingbats font: pdf.js passes its character codes through unmapped */
  dingbats: boolean;
  /** a Windows symbol font (Wingdings): pdf.js gives its glyphs as private use characters */
  symbols: SymbolFont | undefined;
}

/** What matters about a font (by pdf.js font id), from its flags and name; remembered per font. */
function fontFacts(page: PDFPageProxy): (fontName: string) => FontFacts {
  const known = new Map<string, FontFacts>();
  return (fontName) => {
    let facts = known.get(fontName);
    if (facts === undefined) {
      facts = { bold: false, dingbats: false, symbols: undefined };
      try {
        if (page.commonObjs.has(fontName)) {
          const font = page.commonObjs.get(fontName) as { name?: string; bold?: boolean } | undefined;
          facts.bold = Boolean(font?.bold) || /bold|black|heavy|semibold|demi/i.test(font?.name ?? '');
          facts.dingbats = isDingbatsFont(font?.name);
          facts.symbols = symbolFontOf(font?.name);
        }
      } catch {
        // font not resolved: nothing known
      }
      known.set(fontName, facts);
    }
    return facts;
  };
}

function countImages(ops: { fnArray: number[]; argsArray: unknown[][] }): number {
  let count = 0;
  for (let i = 0; i < ops.fnArray.length; i++) {
    const fn = ops.fnArray[i];
    const args = ops.argsArray[i] ?? [];
    let width = 0;
    let height = 0;
    if (fn === OPS.paintImageXObject || fn === OPS.paintImageXObjectRepeat) {
      [width, height] = [Number(args[1]) || 0, Number(args[2]) || 0];
      // the repeat variant carries scale factors, not pixels: count it as one image
      if (fn === OPS.paintImageXObjectRepeat) width = height = MIN_IMAGE_SIDE;
    } else if (fn === OPS.paintInlineImageXObject || fn === OPS.paintImageMaskXObject) {
      const image = args[0] as { width?: number; height?: number } | undefined;
      [width, height] = [image?.width ?? 0, image?.height ?? 0];
    } else {
      continue;
    }
    if (width >= MIN_IMAGE_SIDE && height >= MIN_IMAGE_SIDE) count++;
  }
  return count;
}

/**
 * Ruled tables: stroked lines and rectangles (and hairline fills, as Word draws cell borders) collected into
 * pdf-parse's LineStore, which finds grids of crossing lines. Only the count is kept; the cell text is in
 * the page text already.
 */
function countRuledTables(
  ops: { fnArray: number[]; argsArray: unknown[][] },
  page: PDFPageProxy,
  items: TextItem[],
): number {
  const store = new LineStore();
  const viewport = page.getViewport({ scale: 1 });
  let matrix = [1, 0, 0, 1, 0, 0];
  const stack: number[][] = [];
  let shapes = 0;
  for (let i = 0; i < ops.fnArray.length && shapes < 20_000; i++) {
    const fn = ops.fnArray[i];
    const args = ops.argsArray[i] ?? [];
    if (fn === OPS.save) stack.push(matrix);
    else if (fn === OPS.restore) matrix = stack.pop() ?? matrix;
    else if (fn === OPS.transform) matrix = Util.transform(matrix, args as number[]);
    else if (fn === OPS.constructPath) {
      const paint = args[0];
      const box = args[2] as ArrayLike<number> | undefined;
      if (!box || !Number.isFinite(box[0]!) || !Number.isFinite(box[2]!)) continue;
      const [x0, y0, x1, y1] = [box[0]!, box[1]!, box[2]!, box[3]!];
      const w = x1 - x0;
      const h = y1 - y0;
      const stroked = paint === OPS.stroke || paint === OPS.closeStroke;
      const hairline = (paint === OPS.fill || paint === OPS.eoFill) && (w <= 2 || h <= 2);
      if (!stroked && !hairline) continue;
      shapes++;
      if (w > 5 && h > 5 && stroked) {
        store.addRectangle(
          new Rectangle(new Point(x0, y0), w, h).transform(matrix).transform(viewport.transform),
        );
      } else if (w > 5 && h <= 2) {
        const y = (y0 + y1) / 2;
        store.add(
          new PathLine(new Point(x0, y), new Point(x1, y)).transform(matrix).transform(viewport.transform),
        );
      } else if (h > 5 && w <= 2) {
        const x = (x0 + x1) / 2;
        store.add(
          new PathLine(new Point(x, y0), new Point(x, y1)).transform(matrix).transform(viewport.transform),
        );
      }
    }
  }
  if (store.hLines.length < 3 || store.vLines.length < 2) return 0;
  // a point inside each text run (viewport space, like the grid), to tell tables from line drawings
  const points = items
    .filter((item) => item.str.trim() !== '')
    .map((item) => {
      const size = fontSizeOf(item);
      const [x, y] = viewport.convertToViewportPoint(
        Number(item.transform[4]) + Math.min(Number(item.width) || 0, size) / 2,
        Number(item.transform[5]) + size * 0.3,
      ) as [number, number];
      return { x, y };
    });
  try {
    store.normalize();
    // a grid of at least 2 x 2 cells, most of them holding text; figures drawn with lines hold none
    return store.getTableData().filter((table) => {
      const cells = table.rows.flat();
      if (table.rows.length < 2 || Math.max(0, ...table.rows.map((row) => row.length)) < 2) return false;
      const filled = cells.filter((cell) =>
        points.some(
          (p) => p.x >= cell.minXY.x && p.x <= cell.maxXY.x && p.y >= cell.minXY.y && p.y <= cell.maxXY.y,
        ),
      ).length;
      return filled >= 3 && filled >= cells.length / 2;
    }).length;
  } catch {
    return 0; // pdf-parse's grid builder throws on some broken grids: no table then
  }
}

const median = (values: number[]): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/**
 * Lines -> paragraphs: a new paragraph starts where the gap to the previous baseline is clearly larger than
 * the page's usual line spacing, where the text jumps up (next column), where the font size changes, or at
 * an indented first line after a line that ended a sentence.
 */
function groupParagraphs(lines: TextLine[]): Paragraph[] {
  const gaps: number[] = [];
  for (let i = 1; i < lines.length; i++) {
    const gap = lines[i - 1]!.y - lines[i]!.y;
    const size = lines[i]!.size;
    if (gap > size * 0.8 && gap < size * 3) gaps.push(gap / size);
  }
  const spacing = median(gaps) || 1.2;
  const paragraphs: Paragraph[] = [];
  let current: Paragraph | undefined;
  for (const line of lines) {
    const previous = current?.lines[current.lines.length - 1];
    let split = true;
    if (current && previous) {
      const size = Math.max(previous.size, line.size);
      const gap = previous.y - line.y;
      const sizeChange = Math.abs(line.size - previous.size) > 0.15 * Math.min(line.size, previous.size);
      const left = current.left;
      const indented =
        line.x0 - left > size * 0.8 && line.x0 - left < size * 6 && /[.!?:"“”]$/.test(previous.text.trim());
      split =
        gap < -size * 0.5 || gap > size * Math.max(spacing * 1.35, spacing + 0.45) || sizeChange || indented;
    }
    if (split || !current) {
      current = { lines: [line], size: line.size, bold: line.bold, left: line.x0 };
      paragraphs.push(current);
    } else {
      current.lines.push(line);
      current.left = Math.min(current.left, line.x0);
      current.bold &&= line.bold;
    }
  }
  return paragraphs;
}

const comparable = (text: string): string =>
  normalizeText(text)
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

const NUMBERED_HEADING = /^(\d{1,2}(?:\.\d{1,2}){0,4})\.?\s+\p{L}/u;

/**
 * Headings from the outline; where it names no heading found in the text, or fewer than half of its entries (an
 * outline whose titles differ from the ones printed: "Kapitel 1: Grundlagen" for "KAPITEL EINS: Grundlagen"),
 * the heuristics mark the paragraphs it left unmarked as well.
 */
function markHeadings(pages: PageData[], outline: OutlineEntry[]): void {
  const titles = outline.filter((entry) => comparable(entry.title) !== '').length;
  const matched = titles > 0 ? markOutlineHeadings(pages, outline) : 0;
  if (matched < titles / 2 || matched === 0) markHeuristicHeadings(pages);
}

/**
 * Outline titles found on their destination page (or, without one, on the first page at or after the last
 * match) mark the first lines of a paragraph as a heading of the outline's level. Returns the number found.
 */
function markOutlineHeadings(pages: PageData[], outline: OutlineEntry[]): number {
  const byNumber = new Map(pages.map((page) => [page.number, page]));
  let matched = 0;
  let lastPage = pages[0]?.number ?? 1;
  for (const entry of outline) {
    const wanted = comparable(entry.title);
    if (wanted === '') continue;
    // an entry without a page (a link, or a destination that does not resolve) is looked for from the page of the
    // last one found, OUTLINE_SEARCH_PAGES on: the rest of the document for each took an outline of thousands of
    // links over minutes
    const candidates =
      entry.page !== undefined
        ? [byNumber.get(entry.page)]
        : pages.filter((p) => p.number >= lastPage && p.number < lastPage + OUTLINE_SEARCH_PAGES);
    search: for (const page of candidates) {
      if (!page) continue;
      for (let p = 0; p < page.paragraphs.length; p++) {
        const paragraph = page.paragraphs[p]!;
        if (paragraph.heading !== undefined) continue;
        let text = '';
        let lines = '';
        for (let k = 0; k < Math.min(3, paragraph.lines.length); k++) {
          // lines joined as the heading will be: a word wrapped at a hyphen is one ("Funk-" over "theorie")
          lines = k === 0 ? paragraph.lines[k]!.text : `${lines}\n${paragraph.lines[k]!.text}`;
          text = comparable(joinLineEndHyphenation(lines).replace(/\n/g, ' '));
          if (text === wanted) {
            splitHeading(page, p, k + 1, Math.min(entry.level, 6));
            matched++;
            lastPage = page.number;
            break search;
          }
          if (!wanted.startsWith(text)) break;
        }
      }
    }
  }
  return matched;
}

/** How far after the last heading found an outline entry without a page is looked for. */
const OUTLINE_SEARCH_PAGES = 100;

/** Makes the first `count` lines of paragraph `index` a heading paragraph of its own. */
function splitHeading(page: PageData, index: number, count: number, level: number): void {
  const paragraph = page.paragraphs[index]!;
  const rest = paragraph.lines.slice(count);
  paragraph.lines = paragraph.lines.slice(0, count);
  paragraph.heading = level;
  if (rest.length > 0) {
    page.paragraphs.splice(index + 1, 0, {
      lines: rest,
      size: rest[0]!.size,
      bold: rest.every((l) => l.bold),
      left: Math.min(...rest.map((l) => l.x0)),
    });
  }
}

/**
 * Without a usable outline (or beside one that missed most of its headings): short single-line paragraphs that are numbered ("2.1 Aufbau") and not smaller
 * than the body text, or that stand out by a clearly larger font, or by bold type where the body is not
 * bold. Numbered headings take their level from the numbering depth, the others from the rank of their
 * (size, boldness) among the heading candidates (at most 3).
 */
function markHeuristicHeadings(pages: PageData[]): void {
  const weights = new Map<number, { chars: number; bold: number }>();
  for (const page of pages) {
    for (const paragraph of page.paragraphs) {
      for (const line of paragraph.lines) {
        const size = Math.round(line.size * 2) / 2;
        const weight = weights.get(size) ?? { chars: 0, bold: 0 };
        weight.chars += line.text.length;
        if (line.bold) weight.bold += line.text.length;
        weights.set(size, weight);
      }
    }
  }
  let body = 0;
  let bodyWeight = { chars: -1, bold: 0 };
  for (const [size, weight] of weights) {
    if (weight.chars > bodyWeight.chars) [body, bodyWeight] = [size, weight];
  }
  if (body === 0) return;
  const boldBody = bodyWeight.bold > bodyWeight.chars / 2;
  const looksLikeHeading = (text: string, maxWords: number): boolean =>
    text.length >= 3 &&
    text.length <= 250 &&
    text.split(/\s+/).length <= maxWords &&
    (text.match(/\p{L}/gu)?.length ?? 0) >= 3 &&
    !/[.,;:!?]$/.test(text) &&
    !/^[\d\s.,:;%€$()/-]+$/.test(text);
  const ranked: Array<{ paragraph: Paragraph; key: number }> = [];
  for (const page of pages) {
    for (const paragraph of page.paragraphs) {
      if (paragraph.heading !== undefined) continue; // the outline's
      const size = paragraph.size;
      // a title in a large font may wrap; anything else must be a single line
      if (paragraph.lines.length > (size >= body * 1.5 ? 3 : 1)) continue;
      const text = paragraph.lines.map((line) => line.text.trim()).join(' ');
      const emphasised = paragraph.bold && !boldBody;
      const numbered = NUMBERED_HEADING.exec(text);
      if (
        numbered &&
        looksLikeHeading(text, 12) &&
        size >= body * 0.95 &&
        (size >= body * 1.1 || emphasised)
      ) {
        paragraph.heading = Math.min(numbered[1]!.split('.').filter(Boolean).length, 6);
      } else if (looksLikeHeading(text, paragraph.lines.length * 12) && size >= body * 1.3) {
        ranked.push({ paragraph, key: Math.round(size * 2) / 2 + (emphasised ? 0.25 : 0) });
      } else if (looksLikeHeading(text, 8) && emphasised && size >= body * 0.95) {
        ranked.push({ paragraph, key: Math.round(size * 2) / 2 + 0.25 });
      }
    }
  }
  const ranks = [...new Set(ranked.map((r) => r.key))].sort((a, b) => b - a);
  for (const { paragraph, key } of ranked) paragraph.heading = Math.min(ranks.indexOf(key) + 1, 3);
}

/** Info titles that are really file names ("Microsoft Word - Katalog.doc", "main.tex") are not titles. */
function usableTitle(title: string | undefined): string | undefined {
  const value = title?.trim();
  if (!value) return undefined;
  if (/^(microsoft \w+ - |untitled|unbenannt)/i.test(value)) return undefined;
  if (/\.(docx?|pptx?|xlsx?|odt|tex|dvi|pdf|indd|qxd|rtf|txt)$/i.test(value)) return undefined;
  if (!/\s/.test(value) && /\d/.test(value)) return undefined; // a scanner or job id, not words
  return value;
}

const isoDate = (value: unknown): string | undefined =>
  value instanceof Date && !Number.isNaN(value.getTime()) ? value.toISOString() : undefined;

/**
 * A word hyphenated at the end of a page ("Qualitäts-" / "sicherung" on the next): its second part moves up to the
 * page where it starts, when the last paragraph of a page ends in a hyphen (or a soft hyphen) after a letter and
 * the next page's first paragraph begins in lower case, and joinLineEndHyphenation joins them as it would within
 * a page ("Lehr-" / "und Lernmittel" stays). Headings are left alone (undefined entries).
 */
function joinAcrossPageBreaks(bodies: Array<Array<string | undefined>>): void {
  for (let p = 0; p + 1 < bodies.length; p++) {
    const here = bodies[p]!;
    const next = bodies[p + 1]!;
    const last = here.length - 1;
    const end = here[last];
    const start = next[0];
    if (end === undefined || start === undefined || !/\p{L}[-\u2010\u00AD]$/u.test(end)) continue;
    const word = /^\p{Ll}\S*/u.exec(start)?.[0];
    if (!word) continue;
    const joined = joinLineEndHyphenation(`${end}\n${word}`);
    if (joined === `${end}\n${word}`) continue;
    here[last] = joined;
    next[0] = start.slice(word.length).replace(/^\s+/, '');
  }
}

function build(
  pages: PageData[],
  info: Awaited<ReturnType<PDFParse['getInfo']>>,
  outline: OutlineEntry[],
  warnings: string[],
  furniture: string[],
): ExtractedDocument {
  const builder = new DocumentBuilder('pdf');
  builder.warnings.push(...warnings);
  let firstHeading: string | undefined;
  // body paragraphs' texts (soft hyphens still there to be joined; NFC first so umlauts count as letters)
  const bodies = pages.map((page) =>
    page.paragraphs.map((paragraph) =>
      paragraph.heading === undefined
        ? paragraph.lines
            .map((line) => line.text)
            .join('\n')
            .normalize('NFC')
        : undefined,
    ),
  );
  joinAcrossPageBreaks(bodies);
  for (const [p, page] of pages.entries()) {
    builder.startPage(page.number, page.metadata);
    if (page.metadata.ocrNeeded) builder.ocrNeeded = true;
    for (const [i, paragraph] of page.paragraphs.entries()) {
      const body = bodies[p]![i];
      if (body !== undefined) {
        builder.add('paragraph', joinLineEndHyphenation(body));
        continue;
      }
      // a heading wrapped at a hyphen ("Qualitäts-" over "sicherung") is one word again, as in a paragraph
      const raw = joinLineEndHyphenation(paragraph.lines.map((line) => line.text).join('\n'));
      // from the start of a run of white space only (at every position of a long run, the match was quadratic)
      const block = builder.add('heading', raw.replace(/(?<!\s)\s*\n\s*/g, ' '), paragraph.heading);
      if (block && firstHeading === undefined) firstHeading = normalizeText(raw.replace(/\s+/g, ' ')).trim();
    }
  }
  const pdfInfo = (info.info ?? {}) as Record<string, unknown>;
  const text = (key: string): string | undefined => {
    const value = pdfInfo[key];
    return typeof value === 'string' && value.trim() !== '' ? normalizeText(value).trim() : undefined;
  };
  const dates = info.getDateNode();
  const xmpTitle = info.metadata?.get('dc:title');
  const metadata: Record<string, unknown> = {
    title:
      usableTitle(text('Title')) ??
      usableTitle(typeof xmpTitle === 'string' ? xmpTitle : undefined) ??
      firstHeading,
    author: text('Author'),
    subject: text('Subject'),
    keywords: text('Keywords'),
    creator: text('Creator'),
    producer: text('Producer'),
    pdfVersion: text('PDFFormatVersion'),
    created: isoDate(dates.CreationDate ?? dates.XmpCreateDate),
    modified: isoDate(dates.ModDate ?? dates.XmpModifyDate),
    pageCount: pages.length,
  };
  if (outline.length > 0) metadata.outline = outline;
  // what was left out as running headers, footers and page numbers (one example of each)
  if (furniture.length > 0) metadata.pageFurniture = furniture.slice(0, 20);
  const permissions = readPermissions(info.permission);
  if (permissions) {
    // pdf.js reports permission flags only for encrypted files
    metadata.encrypted = true;
    metadata.permissions = permissions;
    if (!permissions.copy)
      builder.warnings.push('the PDF forbids copying text (copy:no); extracted for indexing');
  }
  for (const key of Object.keys(metadata)) if (metadata[key] === undefined) delete metadata[key];
  return builder.build(metadata);
}

/** pdf.js PermissionFlag values (PDF 32000-1, table 22). */
function readPermissions(flags: number[] | null | undefined): Record<string, boolean> | undefined {
  if (!Array.isArray(flags)) return undefined;
  const has = (flag: number): boolean => flags.includes(flag);
  return {
    print: has(0x04),
    modify: has(0x08),
    copy: has(0x10),
    annotate: has(0x20),
    fillForms: has(0x100),
    copyForAccessibility: has(0x200),
  };
}
