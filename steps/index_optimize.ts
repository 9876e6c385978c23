import type { RunStepContext, StepPlugin } from '../src/engine/plugin.js';

export interface IndexOptimizeConfig {
  collections: string[];
}

/** Qdrant: payload indexes (document_id, chunk_index, source_path). Embedded index: ANALYZE / PRAGMA optimize. */
const indexOptimize: StepPlugin<IndexOptimizeConfig> = {
  type: 'index_optimize',
  description:
    'Payload indexes on Qdrant (document_id, chunk_index, source_path); ANALYZE on the embedded index',
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
        default: ['documents'],
      },
    },
  },

  async run(ctx: RunStepContext<IndexOptimizeConfig>) {
    const index = await ctx.providers.vectors();
    let optimized = 0;
    for (const name of ctx.config.collections) {
      ctx.signal.throwIfAborted();
      const info = await index.describeCollection(name);
      if (!info.exists) {
        ctx.log.info(`collection '${name}' does not exist yet: nothing to optimise`, { backend: index.kind });
        continue;
      }
      const done = await index.optimize(name);
      optimized++;
      for (const line of done)
        ctx.log.info(line, { backend: index.kind, collection: name, points: info.points });
    }
    ctx.report({ itemsIn: ctx.config.collections.length, itemsOut: optimized });
    if (optimized === 0) return ctx.skip('no collection exists yet');
  },
};

export default indexOptimize;
