import { sha256 } from '../util/hash.js';

/**
 * The point id of a chunk: a UUID from SHA-256 of `${document_id}:${chunk_index}`, so storing the same chunk
 * again replaces its point instead of adding one. Formatted as an RFC 9562 version-8 (custom) UUID in the
 * lower-case form Qdrant returns, so ids compare equal as strings after a round trip.
 */
export function chunkPointId(documentId: number, chunkIndex: number): string {
  const hex = sha256(`${documentId}:${chunkIndex}`);
  const variant = ((Number.parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
