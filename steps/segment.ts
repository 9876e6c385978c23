import { getExtraction } from '../src/content/extraction.js';
import { loadSections, saveSegments } from '../src/content/structure-store.js';
import type { StepPlugin } from '../src/engine/plugin.js';
import { segmentDocument } from '../src/text/segment.js';
import { buildSections } from '../src/text/structure.js';

/** Paragraphs, list items, tables, code and German-aware sentences inside sections -> document_segments. */
const segment: StepPlugin<{ long_list_item_chars: number }> = {
  type: 'segment',
  description:
    'Split sections into paragraphs, list items, tables, code and sentences (German-aware) -> document_segments',
  scope: 'document',
  reads: ['text', 'sections'],
  writes: ['segments'],
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      long_list_item_chars: {
        type: 'integer',
        minimum: 20,
        default: 300,
        description: 'longer list items are split into sentences',
      },
    },
  },
  async run(ctx) {
    const doc = await getExtraction(ctx);
    const sections = (await loadSections(ctx.db, ctx.document.id)) ?? buildSections(doc);
    const segments = segmentDocument(doc, sections, { longListItemChars: ctx.config.long_list_item_chars });
    await saveSegments(ctx.db, ctx.document.id, segments);
    ctx.report({
      itemsIn: sections.length,
      itemsOut: segments.length,
      sentences: segments.reduce((n, s) => n + s.sentences.length, 0),
    });
  },
};

export default segment;
