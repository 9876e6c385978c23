import type { RunStepContext, StepPlugin } from '../src/engine/plugin.js';

export interface CollectionSetupConfig {
  collections: string[];
  distance: 'Cosine';
  model?: string;
}

/**
 * Makes sure the collections exist with the embedder's size and distance, and refuses a collection that was
 * built with another model or size (the stamp in vector_collections), saying how to move to a new collection.
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
      model: { type: 'string', minLength: 1, description: "default: the configured embedder's model" },
    },
  },

  async run(ctx: RunStepContext<CollectionSetupConfig>) {
    const embedder = await ctx.providers.embedder(ctx.config.model ? { model: ctx.config.model } : undefined);
    const index = await ctx.providers.vectors();
    for (const name of ctx.config.collections) {
      ctx.signal.throwIfAborted();
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
