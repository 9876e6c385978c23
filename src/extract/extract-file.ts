/**
 * The extraction dispatcher: one file in, one ExtractedDocument (or one FileError) out. The format comes
 * from the bytes (sniffFormat), never from the extension alone. The PDF and Office extractors are loaded on
 * first use: an extraction process that reads a DOCX does not load pdf.js (~90 ms of its start), one that reads
 * a PDF does not load mammoth, and a broken module of one format cannot break the others.
 *
 * This runs in the calling thread; use extractIsolated (isolate.ts) for untrusted files, so a hang or a
 * memory blow-up becomes that file's error instead of the end of the run.
 */
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { CpeError, ErrorCodes, FileError } from '../errors.js';
import { extractMarkdown } from './markdown.js';
import { checkFileSize, sniffFormat } from './sniff.js';
import { extractTxt } from './txt.js';
import {
  type DocumentFormat,
  defaultExtractOptions,
  type ExtractedDocument,
  type ExtractOptions,
} from './types.js';

export const supportedExtensions = ['.pdf', '.docx', '.pptx', '.md', '.txt'];

type Extractor = (bytes: Uint8Array, file: string, options: ExtractOptions) => Promise<ExtractedDocument>;

async function extractorFor(format: DocumentFormat, file: string): Promise<Extractor> {
  switch (format) {
    case 'pdf':
      return (await loadExtractorModule('./pdf.js', file)).extractPdf as Extractor;
    case 'txt':
      return extractTxt;
    case 'md':
      return extractMarkdown;
    case 'docx':
      return (await loadExtractorModule('./docx.js', file)).extractDocx as Extractor;
    case 'pptx':
      return (await loadExtractorModule('./pptx.js', file)).extractPptx as Extractor;
  }
}

async function loadExtractorModule(specifier: string, file: string): Promise<Record<string, unknown>> {
  try {
    return (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    throw new CpeError(ErrorCodes.STEP_FAILED, `${file}: extractor module ${specifier} cannot be loaded`, {
      cause: error,
    });
  }
}

export async function extractFile(
  path: string,
  options: Partial<ExtractOptions> = {},
): Promise<ExtractedDocument> {
  const settings: ExtractOptions = { ...defaultExtractOptions, ...options };
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new FileError(ErrorCodes.FILE_UNREADABLE, path, 'not a regular file');
    size = info.size;
  } catch (error) {
    throw error instanceof FileError ? error : unreadable(path, error);
  }
  if (size === 0) throw new FileError(ErrorCodes.FILE_EMPTY, path, 'empty file');
  checkFileSize(path, size, settings.maxFileBytes);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw unreadable(path, error);
  }
  const { format } = sniffFormat(bytes, extname(path), path);
  const extract = await extractorFor(format, path);
  try {
    return await extract(bytes, path, settings);
  } catch (error) {
    if (error instanceof CpeError) throw error;
    // a library tripping over hostile input: the file is what is broken
    const reason = error instanceof Error ? error.message : String(error);
    throw new FileError(ErrorCodes.CORRUPT_FILE, path, `cannot extract ${format.toUpperCase()} (${reason})`, {
      cause: error,
    });
  }
}

function unreadable(file: string, error: unknown): FileError {
  const code = (error as { code?: unknown } | null)?.code;
  const reason =
    code === 'ENOENT' ? 'file not found' : `cannot read file${typeof code === 'string' ? ` (${code})` : ''}`;
  return new FileError(ErrorCodes.FILE_UNREADABLE, file, reason, { cause: error });
}
