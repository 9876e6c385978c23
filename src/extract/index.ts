/** Public API of text extraction: one call per file, in process (extractFile) or isolated (extractIsolated). */
export { DocumentBuilder } from './document-builder.js';
export { extractFile, supportedExtensions } from './extract-file.js';
export { disposeIsolatedWorkers, extractIsolated, type IsolateOptions } from './isolate.js';
export { extractMarkdown } from './markdown.js';
export { joinLineEndHyphenation, normalizeText } from './normalize.js';
export { extractPdf } from './pdf.js';
export { sniffFormat, validateFile } from './sniff.js';
export { type DecodedText, decodeText, extractTxt } from './txt.js';
export * from './types.js';
