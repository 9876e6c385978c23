/**
 * Vectors in SQL are float32 BLOBs: little-endian, 4 bytes per dimension (x86 and ARM are both little-endian,
 * and Float32Array uses the platform's order). Never JSON: a 1024-dim vector is 4 KiB instead of ~20 KiB.
 */
export function vectorToBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** A copy (the driver's Buffer may be a slice of a shared pool, not 4-byte aligned). */
export function blobToVector(blob: Uint8Array): Float32Array {
  if (blob.byteLength % 4 !== 0) throw new Error(`vector BLOB of ${blob.byteLength} bytes is not float32`);
  const out = new Float32Array(blob.byteLength / 4);
  new Uint8Array(out.buffer).set(blob);
  return out;
}

/** Unit length, so that cosine similarity is a dot product: a normalised copy. A zero vector stays zero. */
export function normalizeVector(vector: Float32Array): Float32Array {
  return normalizeInPlace(new Float32Array(vector));
}

/** normalizeVector without the copy: the vector itself scaled to unit length (and returned). */
export function normalizeInPlace(vector: Float32Array): Float32Array {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i] * vector[i];
  if (norm === 0) return vector;
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < vector.length; i++) vector[i] = vector[i] * scale;
  return vector;
}

/** How far the squared length of a float32 vector may be from 1 and still count as unit length (rounding). */
const UNIT_TOLERANCE = 1e-6;

/**
 * The vector itself when it is already unit length (the local embedder's and Ollama's vectors are), else a
 * normalised copy. Keeping a unit vector's bytes as they are lets the embedded index refer to the embedding
 * cache's row instead of storing a second, renormalised copy that differs in the last bits.
 */
export function unitVector(vector: Float32Array): Float32Array {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i] * vector[i];
  return Math.abs(norm - 1) <= UNIT_TOLERANCE ? vector : normalizeVector(vector);
}
