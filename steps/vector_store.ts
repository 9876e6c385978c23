import type { StepContext, StepPlugin } from '../src/engine/plugin.js';
import {
  pipelineEmbedModel,
  removeDocumentPoints,
  storeDocumentPoints,
} from '../src/vectors/store-points.js';

export interface VectorStoreConfig {
  collection: string;
  model?: string;
}

/**
 * Upserts the document's points (deterministic ids, payload pointing back to SQL), then removes the points of
 * its superseded versions; for a deleted file, removes its points. The vectors are the embed step's model's unless
 * config.model names another; a document whose chunks are embedded, but not with that model, fails the step.
 */
const vectorStore: StepPlugin<VectorStoreConfig> = {
  type: 'vector_store',
  description:
    'Upserts one point per embedded chunk (payload: document_id, document_title, chunk_index, content, ' +
    'heading_path, source_path), then removes the points of superseded versions',
  scope: 'document',
  reads: ['embeddings'],
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      collection: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,100}$', default: 'documents' },
      model: {
        type: 'string',
        minLength: 1,
        description:
          "whose vectors are stored; default: the embed step's model, else the configured embedder's",
      },
    },
  },

  async run(ctx: StepContext<VectorStoreConfig>) {
    if (ctx.document.action === 'delete') {
      const removed = await removeDocumentPoints(ctx, ctx.document.sourcePath, ctx.config.collection);
      ctx.report({ itemsIn: 0, itemsOut: 0, versionsRemoved: removed.length });
      return;
    }
    const result = await storeDocumentPoints(ctx, ctx.document.id, {
      collection: ctx.config.collection,
      model: ctx.config.model ?? pipelineEmbedModel(ctx.pipeline),
    });
    ctx.report({
      itemsIn: result.stored + result.withoutVector,
      itemsOut: result.stored,
      withoutVector: result.withoutVector,
      versionsRemoved: result.removedVersions.length,
    });
    if (result.note) return ctx.skip(result.note);
  },
};

export default vectorStore;
