import { getExtraction } from '../src/content/extraction.js';
import { saveSections } from '../src/content/structure-store.js';
import type { StepPlugin } from '../src/engine/plugin.js';
import { buildSections } from '../src/text/structure.js';

/** The heading tree (Markdown #, DOCX heading styles, PPTX slide titles, PDF outline) -> document_sections. */
const structure: StepPlugin<{ single_h1_as_title: boolean }> = {
  type: 'structure',
  description: 'Build the heading tree with a heading path per section -> document_sections',
  scope: 'document',
  reads: ['text'],
  writes: ['sections'],
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      single_h1_as_title: {
        type: 'boolean',
        default: true,
        description: 'a lone top-level heading is the document title and is left out of heading paths',
      },
    },
  },
  async run(ctx) {
    const doc = await getExtraction(ctx);
    const sections = buildSections(doc, { singleH1AsTitle: ctx.config.single_h1_as_title });
    await saveSections(ctx.db, ctx.document.id, sections);
    ctx.report({ itemsIn: doc.blocks.length, itemsOut: sections.length });
  },
};

export default structure;
