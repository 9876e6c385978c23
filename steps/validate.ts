import type { StepPlugin } from '../src/engine/plugin.js';
import { renameFileError } from '../src/errors.js';
import { validateBytes, validateFile } from '../src/extract/sniff.js';

interface ValidateConfig {
  max_file_mb: number;
  max_unzipped_mb: number;
  max_compression_ratio: number;
}

/**
 * Preflight before any extraction: readable, supported extension, size limit, magic bytes agree with the
 * extension, not an encrypted Office container, DOCX/PPTX not a decompression bomb. A failure names the file
 * and the reason and is permanent (the same bytes fail the same way).
 */
const validate: StepPlugin<ValidateConfig> = {
  type: 'validate',
  description:
    'Preflight check: readable, supported, within size limits, content matches the extension, not encrypted, no ZIP bomb',
  scope: 'document',
  configSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      max_file_mb: { type: 'number', exclusiveMinimum: 0, default: 200 },
      max_unzipped_mb: { type: 'number', exclusiveMinimum: 0, default: 500 },
      max_compression_ratio: { type: 'number', minimum: 10, default: 200 },
    },
  },
  async run(ctx) {
    try {
      const limits = {
        maxFileBytes: ctx.config.max_file_mb * 1024 * 1024,
        maxUnzippedBytes: ctx.config.max_unzipped_mb * 1024 * 1024,
        maxCompressionRatio: ctx.config.max_compression_ratio,
      };
      // bytes archived in SQL are checked in memory: no archive file is written for them
      const { archivedBytes, sourcePath } = ctx.document;
      const { format, size } = archivedBytes
        ? validateBytes(archivedBytes, sourcePath, limits)
        : await validateFile(ctx.document.archivePath, limits);
      ctx.report({ itemsIn: 1, itemsOut: 1, bytes: size });
      ctx.log.debug(`valid ${format} file`, { format, size });
    } catch (error) {
      throw renameFileError(error, ctx.document.sourcePath);
    }
  },
};

export default validate;
