import path from 'node:path';
import { getExtraction } from '../src/content/extraction.js';
import { detectLanguage } from '../src/content/language.js';
import { chooseTitle } from '../src/content/title.js';
import type { StepPlugin } from '../src/engine/plugin.js';
import { sqlTime } from '../src/util/time.js';

/** Title, language, counts, dates and folder tags onto the document row. */
const metadataStore: StepPlugin<{ tags_from_folders: boolean }> = {
  type: 'metadata_store',
  description:
    'Store title, language, page/word/chunk counts, dates and tags from the folder path on the document',
  scope: 'document',
  reads: ['text', 'chunks'],
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: { tags_from_folders: { type: 'boolean', default: true } },
  },
  async run(ctx) {
    const doc = await getExtraction(ctx);
    const title = chooseTitle(doc, ctx.document.filename);
    const language = detectLanguage(doc.text);
    const [{ n: chunkCount } = { n: 0 }] = await ctx.db.query<{ n: number }>(
      'SELECT COUNT(*) AS n FROM chunks WHERE document_id = ?',
      [ctx.document.id],
    );
    const relative = ctx.run.sourceDir
      ? path.relative(ctx.run.sourceDir, path.dirname(ctx.document.sourcePath))
      : '';
    const tags =
      ctx.config.tags_from_folders && relative && !relative.startsWith('..')
        ? relative.split(path.sep).filter(Boolean)
        : [];
    const dates = Object.fromEntries(
      Object.entries(doc.metadata).filter(
        ([k, v]) => /created|modified|date/i.test(k) && (typeof v === 'string' || typeof v === 'number'),
      ),
    );
    // merged, not written over: steps beside this one (a custom step after chunk) keep their keys
    await ctx.mergeDocumentMetadata(ctx.document.id, {
      format: doc.format,
      words: (doc.text.match(/\p{L}[\p{L}\p{N}'-]*/gu) ?? []).length,
      characters: doc.text.length,
      pages: doc.pages.length,
      chunks: Number(chunkCount),
      tags,
      dates,
      ocr_needed: doc.ocrNeeded,
    });
    await ctx.db.run(
      'UPDATE documents SET title = ?, language = ?, page_count = ?, updated_at = ? WHERE id = ?',
      [title, language, doc.pages.length, sqlTime(), ctx.document.id],
    );
    ctx.report({ itemsIn: 1, itemsOut: 1 });
  },
};

export default metadataStore;
