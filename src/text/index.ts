export {
  type ChunkConfig,
  type ChunkCut,
  type ChunkDraft,
  type ChunkInput,
  type ChunkMetadata,
  type ChunkOptions,
  checkChunkConfig,
  chunkConfigFromJson,
  chunkConfigSchema,
  chunkDocument,
  defaultChunkConfig,
  GERMAN_CHARS_PER_TOKEN,
  tinyChunkChars,
} from './chunk.js';
export {
  type ChunkQuality,
  type ChunkQualityOptions,
  chunkQuality,
  locateChunks,
  mergeChunkQuality,
  type QualityChunk,
} from './quality.js';
export {
  type Segment,
  type SegmentInput,
  type SegmentOptions,
  type SegmentType,
  segmentDocument,
} from './segment.js';
export { type SentenceSpan, splitSentences, type TextSpan } from './sentences.js';
export {
  buildSections,
  pageAt,
  type Section,
  type StructureInput,
  type StructureOptions,
  sectionAt,
  topLevelIndex,
} from './structure.js';
export {
  countTokens,
  countTokensInRange,
  estimateTokensByChars,
  tokenizerName,
  tokenWeight,
} from './tokenizer.js';
