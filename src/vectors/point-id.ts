import { sha256 } from '../util/hash.js';

/**
 * A deterministic point id: an RFC 9562 version-8 (custom) UUID from SHA-256 of `key`, in the lower-case form
 * Qdrant returns, so ids compare equal as strings after a round trip.
 */
export function pointIdFromKey(key: string): string {
  const hex = sha256(key);
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The point id of a chunk: from `${document_id}:${chunk_index}`, so storing the same chunk again replaces its point
 * instead of adding one.
 */
export const chunkPointId = (documentId: number, chunkIndex: number): string =>
  pointIdFromKey(`${documentId}:${chunkIndex}`);
