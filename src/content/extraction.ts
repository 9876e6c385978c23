import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { SqlExecutor } from '../db/sql.js';
import { rowSlices } from '../db/statement-shapes.js';
import type { StepContext } from '../engine/plugin.js';
import { CpeError, ErrorCodes, FileError, renameFileError } from '../errors.js';
import { extractIsolated } from '../extract/isolate.js';
import { extractMarkdown, markdownHeldInsteadOfText } from '../extract/markdown.js';
import { checkFileSize, sniffFormat } from '../extract/sniff.js';
import { extractTxt, heldInsteadOfText, noTextReason } from '../extract/txt.js';
import {
  defaultExtractOptions,
  type ExtractedDocument,
  type ExtractOptions,
  type PageInfo,
} from '../extract/types.js';
import { parseJsonColumn } from '../util/json.js';
import { sqlTime } from '../util/time.js';

const MEMO_KEY = 'extraction';

export interface ExtractionLimits extends Partial<ExtractOptions> {
  timeoutMs?: number;
  maxMemoryMb?: number;
}

/**
 * The document's extraction, once per document and run: from the memo, else from document_extracts (a resumed
 * run), else by extracting the archived bytes in an isolated worker (a hang or runaway memory becomes this
 * file's error). Errors name the source file, not the archive copy.
 */
export async function getExtraction(
  ctx: StepContext,
  limits: ExtractionLimits = {},
  fresh = false,
): Promise<ExtractedDocument> {
  // a step that extracts (fresh) takes the memo only of an extraction made under its own limits: page_split's
  // max_pages must not stand in for extract's
  const key = fresh ? `${MEMO_KEY}:${JSON.stringify(limits)}` : MEMO_KEY;
  const memo = ctx.memo.get(key) as ExtractedDocument | undefined;
  if (memo) return memo;
  if (!fresh) {
    const stored = await loadExtraction(ctx.db, ctx.document.id);
    if (stored) {
      ctx.memo.set(MEMO_KEY, stored);
      return stored;
    }
  }
  const { archivedBytes, sourcePath } = ctx.document;
  try {
    // bytes archived in SQL: a text file is read from them, named by its source (no archive file is written)
    let extracted: ExtractedDocument;
    if (archivedBytes && inProcessText(sourcePath, archivedBytes.length)) {
      extracted = await extractTextInProcess(archivedBytes, sourcePath, extractOptions(limits));
    } else {
      const archived = ctx.document.archivePath;
      extracted = await extractArchived(archived, limits);
      // warnings name the file as errors do: by its source, not by the archived copy the reader was given
      extracted.warnings = extracted.warnings.map((w) => w.split(archived).join(sourcePath));
    }
    await refuseTextlessVersion(ctx, extracted, extractOptions(limits));
    ctx.memo.set(MEMO_KEY, extracted);
    if (fresh) ctx.memo.set(key, extracted);
    return extracted;
  } catch (error) {
    throw renameFileError(error, sourcePath);
  }
}

/**
 * A Markdown or text version without text (the file emptied but for a byte order mark, white space or front matter,
 * as Notepad saves an emptied file) while another version of the file is current fails as FILE_EMPTY, as a file
 * of 0 bytes does: the current version stays searchable instead of being replaced by one without chunks. A first
 * version without text is stored as extracted. PDF, DOCX and PPTX without text are left to later steps (OCR, vision).
 */
async function refuseTextlessVersion(
  ctx: StepContext,
  extracted: ExtractedDocument,
  options: ExtractOptions,
): Promise<void> {
  if (extracted.blocks.length > 0 || (extracted.format !== 'md' && extracted.format !== 'txt')) return;
  const { id, sourcePath } = ctx.document;
  const [current] = await ctx.db.query<{ version: number }>(
    "SELECT version FROM documents WHERE source_path = ? AND id <> ? AND is_latest = 1 AND status = 'done'",
    [sourcePath, id],
  );
  if (!current) return;
  const bytes = ctx.document.archivedBytes ?? readFileSync(ctx.document.archivePath);
  const held =
    extracted.format === 'md' ? markdownHeldInsteadOfText(bytes, options) : heldInsteadOfText(bytes);
  throw new FileError(
    ErrorCodes.FILE_EMPTY,
    sourcePath,
    `${noTextReason(held)}: not made the current version, version ${current.version} stays current`,
  );
}

/** Plain text and Markdown up to this size are extracted in the calling process (see extractArchived). */
export const IN_PROCESS_TEXT_BYTES = 8 * 1024 * 1024;
const TEXT_EXTENSIONS = new Set(['.md', '.txt']);

/**
 * Extracts a file: PDF, DOCX and PPTX (binary formats with decompression, parsed by large libraries) always in
 * an isolated child process; Markdown and plain text up to IN_PROCESS_TEXT_BYTES in this process. Their readers
 * are line-by-line scans with no decompression, so a file of a few megabytes cannot hang or balloon, while a
 * child process costs one to several seconds to start and a round trip per file — more than the extraction of
 * a typical text file (a 1.5 MB Markdown file takes ~150 ms). The format is still sniffed from the bytes
 * (a PDF renamed .md fails as FORMAT_MISMATCH either way); a larger text file goes to the isolated child, so
 * the time limit still holds where a scan could take long.
 */
export async function extractArchived(
  file: string,
  limits: ExtractionLimits = {},
): Promise<ExtractedDocument> {
  if (inProcessText(file, sizeOrUndefined(file))) {
    // read at once: the extraction of these bytes runs on this thread right after, without yielding anyway, and
    // one read costs less than the thread-pool round trips of fs.promises (a 512 KB read each)
    return extractTextInProcess(readFileSync(file), file, extractOptions(limits));
  }
  return extractIsolated(file, limits);
}

/** Whether a file of this name and size is extracted in this process (see extractArchived). */
const inProcessText = (file: string, size: number | undefined) =>
  TEXT_EXTENSIONS.has(path.extname(file).toLowerCase()) &&
  size !== undefined &&
  size > 0 &&
  size <= IN_PROCESS_TEXT_BYTES;

/** The extraction options of these limits, without the isolated extractor's own (time and memory). */
function extractOptions(limits: ExtractionLimits): ExtractOptions {
  const { timeoutMs: _timeout, maxMemoryMb: _memory, ...options } = limits;
  return { ...defaultExtractOptions, ...options };
}

/** The file's size; undefined when it cannot be read (the isolated extractor then reports why). */
function sizeOrUndefined(file: string): number | undefined {
  try {
    return statSync(file).size;
  } catch {
    return undefined;
  }
}

/**
 * What extractFile does for the two text formats, without importing it: extract-file.ts loads the PDF reader
 * (pdfjs, ~100 MB of resident memory) at import, which the engine's process should not carry.
 */
async function extractTextInProcess(
  bytes: Buffer,
  file: string,
  options: ExtractOptions,
): Promise<ExtractedDocument> {
  checkFileSize(file, bytes.length, options.maxFileBytes);
  const { format } = sniffFormat(bytes, path.extname(file), file);
  try {
    return format === 'md'
      ? await extractMarkdown(bytes, file, options)
      : await extractTxt(bytes, file, options);
  } catch (error) {
    if (error instanceof CpeError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new FileError(ErrorCodes.CORRUPT_FILE, file, `cannot extract ${format.toUpperCase()} (${reason})`, {
      cause: error,
    });
  }
}

export async function loadExtraction(
  db: SqlExecutor,
  documentId: number,
): Promise<ExtractedDocument | undefined> {
  const [row] = await db.query<Record<string, any>>('SELECT * FROM document_extracts WHERE document_id = ?', [
    documentId,
  ]);
  if (!row) return undefined;
  const pages = parseJsonColumn<PageInfo[]>(row.pages, []);
  let text: string | undefined = row.text;
  if (Number(row.text_in_pages) === 1) {
    const rows = await db.query<{ page_number: number; content: string }>(
      'SELECT page_number, content FROM document_pages WHERE document_id = ?',
      [documentId],
    );
    const contents = new Map(rows.map((r) => [Number(r.page_number), r.content]));
    // pages that no longer match (edited by hand): the caller extracts the archived bytes again
    text = joinPages(pages, (page) => contents.get(page.number));
    if (text === undefined) return undefined;
  }
  return {
    format: row.format,
    text: text ?? '',
    blocks: parseJsonColumn(row.blocks, []),
    pages,
    metadata: parseJsonColumn(row.metadata, {}),
    ocrNeeded: Boolean(Number(row.ocr_needed)),
    warnings: [],
  };
}

/** What DocumentBuilder puts between two blocks, and so between the last block of a page and the next page's. */
const BLOCK_SEPARATOR = '\n\n';

/**
 * The document text from its pages' texts: each non-empty page at its offset, the pages joined by the blank
 * line between blocks. Undefined when the pages do not line up that way (then the text is not theirs to give).
 */
export function joinPages(
  pages: readonly PageInfo[],
  contentOf: (page: PageInfo) => string | undefined,
): string | undefined {
  const parts: string[] = [];
  let length = 0;
  for (const page of pages) {
    if (page.end === page.start) continue;
    const content = contentOf(page);
    if (content === undefined || content.length !== page.end - page.start) return undefined;
    const expectedStart = length === 0 ? 0 : length + BLOCK_SEPARATOR.length;
    if (page.start !== expectedStart) return undefined;
    if (length > 0) parts.push(BLOCK_SEPARATOR);
    parts.push(content);
    length = page.end;
  }
  return parts.join('');
}

/**
 * Replaces the stored extraction of a document (one row, so the replacement is atomic). With the pages written
 * in the same transaction, the text is not stored a second time when the pages reproduce it exactly
 * (text_in_pages = 1; loadExtraction joins it back): page text and extracted text are the same characters.
 */
export async function saveExtraction(
  db: SqlExecutor,
  documentId: number,
  doc: ExtractedDocument,
  options: { withPages?: boolean } = {},
): Promise<void> {
  const textInPages =
    options.withPages === true &&
    doc.text.length > 0 &&
    joinPages(doc.pages, (page) => doc.text.slice(page.start, page.end)) === doc.text;
  const values = [
    documentId,
    textInPages ? '' : doc.text,
    textInPages ? 1 : 0,
    JSON.stringify(doc.blocks),
    JSON.stringify(doc.pages),
    JSON.stringify(doc.metadata),
    doc.format,
    doc.ocrNeeded ? 1 : 0,
    sqlTime(),
  ];
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM document_extracts WHERE document_id = ?', [documentId]);
    await tx.run(
      'INSERT INTO document_extracts (document_id, text, text_in_pages, blocks, pages, metadata, format, ocr_needed, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      values,
    );
    if (options.withPages) await savePages(tx, documentId, doc);
  });
}

/** Replaces the document's pages: text per page and page metadata (images, tables, ocr_needed, slide title). */
export async function savePages(
  db: SqlExecutor,
  documentId: number,
  doc: ExtractedDocument,
): Promise<number> {
  const now = sqlTime();
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM document_pages WHERE document_id = ?', [documentId]);
    for (const slice of rowSlices(tx.dialect, doc.pages, 200)) {
      await tx.run(
        `INSERT INTO document_pages (document_id, page_number, content, metadata, created_at) VALUES ${slice.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
        slice.flatMap((page) => [
          documentId,
          page.number,
          doc.text.slice(page.start, page.end),
          JSON.stringify(page.metadata),
          now,
        ]),
      );
    }
  });
  return doc.pages.length;
}

/** Vision descriptions stored on pages (document_pages.metadata.vision), by page number. */
export async function loadPageVision(db: SqlExecutor, documentId: number): Promise<Map<number, string>> {
  const rows = await db.query<{ page_number: number; metadata: string | null }>(
    'SELECT page_number, metadata FROM document_pages WHERE document_id = ?',
    [documentId],
  );
  const vision = new Map<number, string>();
  for (const row of rows) {
    const meta = parseJsonColumn<Record<string, unknown>>(row.metadata, {});
    const text =
      typeof meta.vision === 'string'
        ? meta.vision
        : (meta.vision as { description?: string } | undefined)?.description;
    if (text) vision.set(Number(row.page_number), text);
  }
  return vision;
}
