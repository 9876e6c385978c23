import { countDocument, finishDocument } from '../src/engine/finish-document.js';
import type { StepPlugin } from '../src/engine/plugin.js';

/**
 * Joins the branches of a document's DAG: counts what the document holds, marks it done and latest, and
 * retracts the versions it replaces (their points and knowledge go only now, after the new ones exist).
 */
const finalize: StepPlugin<Record<string, never>> = {
  type: 'finalize',
  description:
    'Mark the document done: counts onto the document, latest version switched, superseded versions retracted',
  scope: 'document',
  configSchema: { type: 'object', additionalProperties: false, properties: {} },
  async run(ctx) {
    await finishDocument(ctx.db, ctx.providers, ctx.document.id, (message, context) =>
      ctx.log.warn(message, context),
    );
    ctx.report({ itemsIn: 1, itemsOut: 1, ...(await countDocument(ctx.db, ctx.document.id)) });
  },
};

export default finalize;
