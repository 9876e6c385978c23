import type { ExtractionLimits } from './extraction.js';

/** Limits shared by the steps that extract (extract, page_split): one schema, one mapping. */
export const extractionConfigSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    timeout_seconds: {
      type: 'number',
      exclusiveMinimum: 0,
      maximum: 3600,
      default: 30,
      description: 'per file',
    },
    max_memory_mb: {
      type: 'integer',
      minimum: 128,
      maximum: 16384,
      default: 1024,
      description: 'per extraction worker',
    },
    max_pages: { type: 'integer', minimum: 1, default: 5000 },
  },
} as const;

export interface ExtractionConfig {
  timeout_seconds: number;
  max_memory_mb: number;
  max_pages: number;
}

/**
 * The extraction limits of a step's config and the application's settings: `maxFileMb` (CPE_MAX_FILE_MB, the
 * config file's maxFileMb) is the largest file extracted; a larger one fails as FILE_TOO_LARGE naming the limit.
 */
export const extractionLimits = (
  config: ExtractionConfig,
  settings: Readonly<Record<string, unknown>>,
): ExtractionLimits => ({
  timeoutMs: config.timeout_seconds * 1000,
  maxMemoryMb: config.max_memory_mb,
  maxPages: config.max_pages,
  ...(typeof settings.maxFileMb === 'number' && {
    maxFileBytes: Math.floor(settings.maxFileMb * 1024 * 1024),
  }),
});
