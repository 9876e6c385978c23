import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { DocumentRef } from '../engine/plugin.js';
import { describeError } from '../errors.js';
import { fillPrompt } from '../llm/prompts.js';
import type { VisionClient } from '../llm/types.js';
import { sha256 } from '../util/hash.js';
import { parseJsonColumn } from '../util/json.js';
import { documentTitle, loadPages, type PageRow } from './chunks.js';
import { type Asker, billFailure, forEachItem, type KnowledgeContext } from './llm-step.js';
import { clearPageVision } from './retract.js';

export interface VisionConfig {
  /** only pages whose metadata counts images or tables; false: every page */
  only_pages_with_visuals: boolean;
  max_pages: number;
  /** width of the rendered PNG in pixels */
  render_width: number;
  /** how much of the page's own text goes into the prompt (characters) */
  page_text_chars: number;
}

export const visionConfigProperties = {
  only_pages_with_visuals: { type: 'boolean', default: true },
  max_pages: { type: 'integer', minimum: 1, maximum: 10000, default: 100 },
  render_width: { type: 'integer', minimum: 200, maximum: 4000, default: 1280 },
  page_text_chars: { type: 'integer', minimum: 0, maximum: 20000, default: 1500 },
} as const;

export const VISION_PROMPT_KEYS = ['page', 'title', 'page_text'] as const;

/** What document_pages.metadata.vision holds after vision_analyze. */
export interface PageVision {
  description: string;
  contents: string[];
  visibleText: string;
  provider: string;
  model: string;
}

const count = (value: unknown): number =>
  Array.isArray(value) ? value.length : typeof value === 'number' ? value : 0;

/** Pages that hold images or tables according to page_split's metadata. */
export function pagesWithVisuals(pages: readonly PageRow[]): PageRow[] {
  return pages.filter((p) => count(p.metadata.images) > 0 || count(p.metadata.tables) > 0);
}

/**
 * The original bytes of this document version: the archived bytes (exactly the hashed bytes, in memory when
 * archived in SQL, else the archive file), else the archive table's path, else the source file when it still has
 * the version's hash. Undefined when none is.
 */
export async function originalBytes(
  ctx: Pick<KnowledgeContext, 'db'>,
  document: DocumentRef,
): Promise<Uint8Array | undefined> {
  if (document.archivedBytes) return document.archivedBytes;
  const rows = await ctx.db.query<{ storage_path: string }>(
    'SELECT storage_path FROM document_archive WHERE content_hash = ?',
    [document.contentHash],
  );
  for (const candidate of [document.archivePath, rows[0]?.storage_path, document.sourcePath]) {
    if (!candidate) continue;
    const exists = await stat(candidate).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!exists) continue;
    const bytes = await readFile(candidate);
    if (sha256(bytes) === document.contentHash) return bytes;
  }
  return undefined;
}

/** PNGs of the given PDF pages (pdf-parse 2.x getScreenshot on pdf.js + @napi-rs/canvas). */
export async function renderPdfPages(
  bytes: Uint8Array,
  pages: readonly number[],
  width: number,
): Promise<Map<number, Uint8Array>> {
  const { PDFParse } = await import('pdf-parse');
  const parser = new PDFParse({ data: new Uint8Array(bytes) });
  try {
    const result = await parser.getScreenshot({
      partial: [...pages],
      desiredWidth: width,
      imageBuffer: true,
      imageDataUrl: false,
    });
    return new Map(result.pages.map((p) => [p.pageNumber, p.data]));
  } finally {
    await parser.destroy();
  }
}

/**
 * vision_analyze: renders the pages that hold images or tables to PNG, has the vision model describe them, and
 * stores the description on the page (document_pages.metadata.vision), from where the chunker takes it.
 * PDF pages are rendered; other formats have no renderer here and are reported as not rendered.
 */
export async function runVisionAnalysis(
  ctx: KnowledgeContext,
  vision: VisionClient,
  asker: Omit<Asker, 'llm'>,
  config: VisionConfig,
) {
  const pages = await loadPages(ctx.db, ctx.document.id);
  const candidates = (config.only_pages_with_visuals ? pagesWithVisuals(pages) : pages).slice(
    0,
    config.max_pages,
  );
  if (candidates.length === 0)
    return {
      pages: pages.length,
      candidates: 0,
      described: 0,
      notRendered: 0,
      reason: 'no page holds images or tables',
    };
  const ext = path.extname(ctx.document.sourcePath || ctx.document.filename).toLowerCase();
  if (ext !== '.pdf') {
    ctx.log.info(
      `vision_analyze renders PDF pages only; ${candidates.length} ${ext} pages with images/tables not described`,
    );
    return {
      pages: pages.length,
      candidates: candidates.length,
      described: 0,
      notRendered: candidates.length,
      reason: `no renderer for ${ext}`,
    };
  }
  const bytes = await originalBytes(ctx, ctx.document);
  if (!bytes) {
    ctx.log.warn(
      'vision_analyze: the original file of this version is neither archived nor unchanged at its source path',
      {
        sourcePath: ctx.document.sourcePath,
      },
    );
    return {
      pages: pages.length,
      candidates: candidates.length,
      described: 0,
      notRendered: candidates.length,
      reason: 'original file unavailable',
    };
  }
  let images: Map<number, Uint8Array>;
  try {
    images = await renderPdfPages(
      bytes,
      candidates.map((p) => p.pageNumber),
      config.render_width,
    );
  } catch (error) {
    ctx.log.warn(`vision_analyze: rendering failed: ${describeError(error, 500)}`);
    return {
      pages: pages.length,
      candidates: candidates.length,
      described: 0,
      notRendered: candidates.length,
      reason: 'rendering failed',
    };
  }
  const title = await documentTitle(ctx.db, ctx.document.id);
  const renderable = candidates.filter((p) => images.has(p.pageNumber));
  const descriptions = await forEachItem(
    ctx,
    asker,
    renderable,
    (p) => ({ page: p.pageNumber }),
    async (page) => {
      const result = await vision
        .describe({
          image: images.get(page.pageNumber)!,
          system: asker.system,
          prompt: fillPrompt(asker.template, {
            page: page.pageNumber,
            title,
            page_text: page.content.slice(0, config.page_text_chars),
          }),
          maxTokens: asker.config.max_tokens,
          maxRetries: asker.config.max_retries,
          signal: ctx.signal,
        })
        .catch((error: unknown) => {
          billFailure(asker.tally, error); // a page whose answer stayed invalid was paid for, as in ask()
          throw error;
        });
      asker.tally.add(result);
      return result.value;
    },
  );
  let described = 0;
  await ctx.db.transaction(async (tx) => {
    await clearPageVision(tx, ctx.document.id);
    for (const [i, page] of renderable.entries()) {
      const value = descriptions[i];
      if (!value) continue;
      // re-read inside the transaction: page_split owns the rest of the metadata
      const [row] = await tx.query<{ metadata: unknown }>(
        'SELECT metadata FROM document_pages WHERE id = ?',
        [page.id],
      );
      const metadata = parseJsonColumn<Record<string, unknown>>(row?.metadata, {});
      const stored: PageVision = { ...value, provider: vision.provider, model: vision.model };
      metadata.vision = stored;
      await tx.run('UPDATE document_pages SET metadata = ? WHERE id = ?', [
        JSON.stringify(metadata),
        page.id,
      ]);
      described++;
    }
  });
  return {
    pages: pages.length,
    candidates: candidates.length,
    described,
    notRendered: candidates.length - renderable.length,
  };
}
