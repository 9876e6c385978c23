import { chunkContents } from '../src/content/chunk-store.js';
import { chunkContextOf, DEFAULT_EMBED_BATCH, embedChunks } from '../src/embed/embed-chunks.js';
import { DEFAULT_MAX_EMBED_CHARS } from '../src/embed/prepare.js';
import type { StepContext, StepPlugin } from '../src/engine/plugin.js';
import { removeDocumentPoints, storeDocumentPoints } from '../src/vectors/store-points.js';

export interface EmbedConfig {
  model?: string;
  batch_size: number;
  max_embed_chars: number;
  collection: string;
}

/**
 * Embeddings for the document's chunks that lack one for the configured model, through the embedding cache.
 * What is embedded is "document title › heading path" and the chunk text (src/embed/prepare.ts): a chunk's
 * text alone often does not name its topic. max_embed_chars (default 800) caps that text for models with a
 * context window (Ollama); the local embedder has none and reads whole chunks, since a cut would make the rest
 * of each chunk unfindable. When the pipeline has no vector_store step (Standard), it also stores the points,
 * as the original embed.py did.
 */
const embed: StepPlugin<EmbedConfig> = {
  type: 'embed',
  description:
    'Embeddings for chunks that lack one for the configured model: "title › heading path" + chunk text, dot ' +
    'leaders collapsed, capped at max_embed_chars for models with a context window, batched, cached by text ' +
    'hash; stores the points too when the pipeline has no vector_store step',
  scope: 'document',
  reads: ['chunks'],
  writes: ['embeddings'],
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      model: {
        type: 'string',
        minLength: 1,
        description: "embedding model; default: the configured embedder's (Ollama model, or local-hash-v2)",
      },
      batch_size: {
        type: 'integer',
        minimum: 1,
        maximum: 100000,
        default: DEFAULT_EMBED_BATCH,
        description:
          'chunks looked up in the cache, embedded and written per round (the embedder cuts a round into its own ' +
          'requests; the next round is embedded while one is written)',
      },
      max_embed_chars: {
        type: 'integer',
        minimum: 50,
        maximum: 100000,
        default: DEFAULT_MAX_EMBED_CHARS,
        description:
          'the text sent to an embedding model with a context window (Ollama; mxbai-embed-large reads 512 tokens, ' +
          'about 800 German characters) is cut at this many characters, context line included; the local ' +
          'embedder (local-hash-v2) has no window and always embeds the whole chunk',
      },
      collection: {
        type: 'string',
        pattern: '^[A-Za-z0-9_-]{1,100}$',
        default: 'documents',
        description: 'collection the points go to when the pipeline has no vector_store step',
      },
    },
  },

  /**
   * Once per run, before the first document: the local embedder's workers start while that document is read and
   * chunked. Not awaited: an Ollama embedder may first ask its server for the model's size, and whatever goes
   * wrong there is the documents' to report (and retry), as it always was.
   */
  async setup(ctx) {
    void ctx.providers.embedder(ctx.config.model ? { model: ctx.config.model } : undefined).then(
      (embedder) => {
        // the local embedder (no Ollama host) has one model: a model named here would be silently another's
        if (ctx.config.model && embedder.model !== ctx.config.model)
          ctx.log.warn(
            `config.model '${ctx.config.model}' is not used: without an Ollama host (CPE_OLLAMA_HOST) the local embedder embeds with ${embedder.model}`,
          );
        return embedder.warmUp?.();
      },
      () => undefined,
    );
  },

  async run(ctx: StepContext<EmbedConfig>) {
    const storesPoints = !ctx.pipeline.hasStepType('vector_store');
    if (ctx.document.action === 'delete') {
      if (!storesPoints) return ctx.skip('document deleted: vector_store removes its points');
      const removed = await removeDocumentPoints(ctx, ctx.document.sourcePath, ctx.config.collection);
      ctx.report({ itemsIn: 0, itemsOut: 0, versionsRemoved: removed.length });
      return;
    }
    const chunks = await ctx.db.query<{
      id: number;
      chunk_index: number;
      content_hash: string;
      status: string;
      embedding_model: string | null;
      heading_path: unknown;
      title: string | null;
    }>(
      `SELECT c.id, c.chunk_index, c.content_hash, c.status, c.embedding_model, c.heading_path, d.title
       FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.document_id = ? ORDER BY c.chunk_index`,
      [ctx.document.id],
    );
    // the texts the chunk step of this run wrote, where they are unchanged; the rest from SQL
    const contents = await chunkContents(ctx.db, ctx.memo, chunks);
    const embedder = await ctx.providers.embedder(ctx.config.model ? { model: ctx.config.model } : undefined);
    const result = await embedChunks(
      ctx.db,
      embedder,
      chunks.map((c) => ({
        id: Number(c.id),
        content: contents.get(Number(c.id))!,
        status: c.status,
        embedding_model: c.embedding_model,
        context: chunkContextOf(c),
      })),
      {
        maxEmbedChars: ctx.config.max_embed_chars,
        batchSize: ctx.config.batch_size,
        signal: ctx.signal,
        log: ctx.log,
      },
    );
    let stored = 0;
    let versionsRemoved = 0;
    if (storesPoints) {
      const points = await storeDocumentPoints(ctx, ctx.document.id, {
        collection: ctx.config.collection,
        model: embedder.model,
        knownVectors: result.vectors,
        knownContents: contents,
      });
      stored = points.stored;
      versionsRemoved = points.removedVersions.length;
    }
    ctx.report({
      itemsIn: chunks.length,
      itemsOut: result.total - result.failed.length,
      embedded: result.embedded,
      cached: result.cached,
      upToDate: result.upToDate,
      failed: result.failed.length,
      ...(storesPoints ? { pointsStored: stored, versionsRemoved } : {}),
    });
    ctx.log.info(`embedded ${chunks.length} chunks with ${embedder.model}`, {
      model: embedder.model,
      embedded: result.embedded,
      cached: result.cached,
      upToDate: result.upToDate,
      failed: result.failed.length,
      pointsStored: storesPoints ? stored : undefined,
    });
  },
};

export default embed;
