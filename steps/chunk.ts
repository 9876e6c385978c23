import { rememberWrittenChunks, replaceChunks } from '../src/content/chunk-store.js';
import { getExtraction, loadPageVision } from '../src/content/extraction.js';
import { loadSections, loadSegments } from '../src/content/structure-store.js';
import type { StepPlugin } from '../src/engine/plugin.js';
import { chunkConfigFromJson, chunkConfigSchema, chunkDocument } from '../src/text/chunk.js';

interface ChunkStepConfig {
  target_tokens: number;
  overlap: number;
  min_chars: number;
  max_chars: number;
}

/**
 * Chunks of the target size with sentence-level overlap, cut only at paragraph or sentence boundaries, each
 * with heading_path, token_count, page range and exact offsets; the page's vision text is included when present.
 * Uses the structure/segment steps' rows when the pipeline has them, else computes the same in memory.
 */
const chunk: StepPlugin<ChunkStepConfig> = {
  type: 'chunk',
  description:
    'Cut the text into chunks (target tokens, ~10% overlap, min/max characters) at paragraph or sentence boundaries',
  scope: 'document',
  reads: ['text', 'sections', 'segments', 'vision'],
  writes: ['chunks'],
  configSchema: { ...chunkConfigSchema, additionalProperties: false },
  // what the schema cannot say: min_chars below max_chars, and the like (a ConfigError names the key)
  checkConfig(config) {
    chunkConfigFromJson(config as unknown as Record<string, unknown>);
    return [];
  },
  async run(ctx) {
    const doc = await getExtraction(ctx);
    const config = chunkConfigFromJson(ctx.config as unknown as Record<string, unknown>);
    const sections = ctx.pipeline.hasStepType('structure')
      ? await loadSections(ctx.db, ctx.document.id)
      : undefined;
    const segments = ctx.pipeline.hasStepType('segment')
      ? await loadSegments(ctx.db, ctx.document.id)
      : undefined;
    const pageVisionText = await loadPageVision(ctx.db, ctx.document.id);
    const chunks = chunkDocument(doc, { config, sections, segments, pageVisionText });
    const written = await replaceChunks(ctx.db, ctx.document.id, chunks, {
      pipelineVersion: ctx.pipeline.versionHash,
      stepConfigHash: ctx.step.lineageHash,
    });
    // the embed step reads them from here instead of decoding them back from the database
    rememberWrittenChunks(ctx.memo, written);
    ctx.report({
      itemsIn: doc.text.length,
      itemsOut: chunks.length,
      tokens: chunks.reduce((n, c) => n + c.tokenCount, 0),
    });
  },
};

export default chunk;
