import type { RunStepContext, StepPlugin } from '../src/engine/plugin.js';
import { ENTITY_COLLECTION } from '../src/knowledge/retract.js';
import { pipelineEmbedModel } from '../src/vectors/store-points.js';

export interface CollectionSetupConfig {
  collections: string[];
  distance: 'Cosine';
  model?: string;
}

/**
 * Makes sure the collections exist with the embedder's size and distance, and refuses a collection that was
 * built with another model or size (the stamp in vector_collections), saying how to move to a new collection.
 * The model is config.model, else the embed step's (whose vectors the pipeline stores), else the configured
 * embedder's; the entities collection always gets the configured embedder's, which entity points are embedded with.
 */
const collectionSetup: StepPlugin<CollectionSetupConfig> = {
  type: 'collection_setup',
  description:
    "Ensures the vector collections exist with the embedder's size and Cosine distance; refuses a collection " +
    'built with another model or size',
  scope: 'run',
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      collections: {
        type: 'array',
        items: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,100}$' },
        minItems: 1,
        uniqueItems: true,
        default: ['documents', 'mail', 'entities'],
      },
      distance: { type: 'string', enum: ['Cosine'], default: 'Cosine' },
      model: {
        type: 'string',
        minLength: 1,
        description:
          "default: the embed step's model, else the configured embedder's (the entities collection: always the configured embedder's)",
      },
    },
  },

  async run(ctx: RunStepContext<CollectionSetupConfig>) {
    const model = ctx.config.model ?? pipelineEmbedModel(ctx.pipeline);
    const index = await ctx.providers.vectors();
    for (const name of ctx.config.collections) {
      ctx.signal.throwIfAborted();
      const embedder = await ctx.providers.embedder(
        model && name !== ENTITY_COLLECTION ? { model } : undefined,
      );
      await index.ensureCollection(
        name,
        { size: embedder.dimensions, distance: ctx.config.distance, model: embedder.model },
        { log: ctx.log },
      );
      ctx.log.info(`collection '${name}' ready`, {
        backend: index.kind,
        location: index.location,
        model: embedder.model,
        dimensions: embedder.dimensions,
      });
    }
    ctx.report({ itemsIn: ctx.config.collections.length, itemsOut: ctx.config.collections.length });
  },
};

export default collectionSetup;
