/**
 * A cosine similarity within [-1, 1]. Unit vectors rounded to float32 give a vector's dot product with itself of up
 * to 1.0000001 (and Qdrant's scores are float32 too): a score above 1 reads as a bug, and breaks a range check.
 * Clamping keeps the order of the scores.
 */
export function clampCosine(score: number): number {
  return Math.min(1, Math.max(-1, score));
}
