import {
  type ExtractionConfig,
  extractionConfigSchema,
  extractionLimits,
} from '../src/content/extract-config.js';
import { getExtraction, savePages } from '../src/content/extraction.js';
import type { StepPlugin } from '../src/engine/plugin.js';

/**
 * Pages: PDF pages, PPTX slides, page breaks or one logical page elsewhere -> document_pages, with page
 * metadata (images, tables, ocr_needed, slide title) for vision_analyze.
 */
const pageSplit: StepPlugin<ExtractionConfig> = {
  type: 'page_split',
  description:
    'Split the document into pages (PDF pages, PPTX slides, logical pages) with page metadata for vision',
  scope: 'document',
  configSchema: extractionConfigSchema,
  async run(ctx) {
    const doc = await getExtraction(ctx, extractionLimits(ctx.config, ctx.settings), true);
    const pages = await savePages(ctx.db, ctx.document.id, doc);
    ctx.report({ itemsIn: 1, itemsOut: pages });
  },
};

export default pageSplit;
