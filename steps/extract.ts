import {
  type ExtractionConfig,
  extractionConfigSchema,
  extractionLimits,
} from '../src/content/extract-config.js';
import { getExtraction, saveExtraction } from '../src/content/extraction.js';
import { chooseTitle } from '../src/content/title.js';
import type { StepPlugin } from '../src/engine/plugin.js';
import { sqlTime } from '../src/util/time.js';

/**
 * Text per format (PDF, DOCX, PPTX, Markdown, TXT), normalised, with block structure and exact offsets, from
 * the archived bytes in an isolated worker. Stores document_extracts; writes the pages too when the pipeline
 * has no page_split step. A scan without text layer succeeds with empty text and ocr_needed.
 */
const extract: StepPlugin<ExtractionConfig> = {
  type: 'extract',
  description:
    'Extract normalised text and structure (PDF, DOCX, PPTX, Markdown, TXT) in an isolated, time- and memory-limited worker',
  scope: 'document',
  writes: ['text'],
  configSchema: extractionConfigSchema,
  async run(ctx) {
    const doc = await getExtraction(ctx, extractionLimits(ctx.config, ctx.settings), true);
    // one transaction for the extraction, (without a page_split step) the pages, and a title right away
    // (metadata_store may refine it), so search results and contexts name the document
    await ctx.db.transaction(async (tx) => {
      await saveExtraction(tx, ctx.document.id, doc, { withPages: !ctx.pipeline.hasStepType('page_split') });
      await tx.run(
        'UPDATE documents SET page_count = ?, title = COALESCE(title, ?), updated_at = ? WHERE id = ?',
        [doc.pages.length, chooseTitle(doc, ctx.document.filename), sqlTime(), ctx.document.id],
      );
    });
    for (const warning of doc.warnings) ctx.log.warn(warning);
    if (doc.ocrNeeded) ctx.log.warn('no text layer on some pages: OCR needed', { ocr_needed: true });
    ctx.report({
      itemsIn: 1,
      itemsOut: doc.blocks.length,
      characters: doc.text.length,
      pages: doc.pages.length,
    });
  },
};

export default extract;
