/**
 * local-hash-v2 as it was first written (strings and Maps), kept as the oracle that the production embedder
 * (src/embed/local-hash.ts: typed arrays, no string per feature) is held to: both must give the same bits for
 * every text, since vectors stored under the name local-hash-v2 must stay comparable with new ones. Its weights,
 * seeds and length weighting are written out again here on purpose (the duplicates tool lists them): they define
 * local-hash-v2, so a change to them in src/ must fail the comparison instead of silently changing the vectors
 * that collections and caches hold under the same name.
 */
import { foldGerman, STOPWORDS, stemGerman } from '../../../src/embed/local-hash.js';

/** weight of one occurrence of a content word (scaled by its length, see lengthWeight) */
const WORD_WEIGHT = 1;
const STOPWORD_WEIGHT = 0.1;
/** adjacent content words (stopwords skipped): "befristeter Arbeitsvertrag" as a phrase */
const BIGRAM_WEIGHT = 0.5;
/** the character n-grams of one word share this much weight, so long words do not outweigh short ones */
const NGRAM_WEIGHT = 1.4;
const NGRAM_SIZES = [3, 4];
/** shorter words get no n-grams: their n-grams would mostly be the word itself */
const NGRAM_MIN_LENGTH = 4;

/**
 * Longer words are rarer and say more (German compounds: "Kündigungsschutz" vs "Satz"); without a corpus to
 * count document frequencies, length stands in for it: 1 at four letters, up to 2 at 16 and more.
 */
function lengthWeight(length: number): number {
  return Math.min(2, Math.log2(Math.max(2, length)) / 2);
}

// Each feature family hashes with its own seed, so a word and an n-gram that happen to be the same string
// ("recht" as a word and as the n-gram of "Urheberrecht") are distinct features.
const SEED_WORD = 0x1234;
const SEED_STOPWORD = 0x7f4a;
const SEED_BIGRAM = 0x9e37;
const SEED_NGRAM = 0x51ed;

/** FNV-1a over code units [start, end) of s, seeded per feature family, with a murmur3 finaliser. */
function hashRange(s: string, start: number, end: number, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = start; i < end; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // final avalanche (murmur3 fmix32): FNV's low bits alone spread poorly over 1024 buckets
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Per distinct feature (32-bit hash): the weight of one occurrence and how often it occurs. */
class FeatureCounts {
  readonly weight = new Map<number, number>();
  readonly count = new Map<number, number>();

  add(hash: number, weight: number): void {
    const seen = this.count.get(hash);
    if (seen === undefined) {
      this.weight.set(hash, weight);
      this.count.set(hash, 1);
    } else {
      // the same feature can come with different weights (n-grams of words of different lengths): keep the largest
      if (weight > this.weight.get(hash)!) this.weight.set(hash, weight);
      this.count.set(hash, seen + 1);
    }
  }
}

/** The distinct features of a text (their hashes), in the order first seen. */
export function localHashFeaturesReference(text: string): number[] {
  return [...featuresOf(text).count.keys()];
}

/** The cosine of two texts' features with each feature a dimension of its own (no buckets, no signs). */
export function exactCosineReference(a: string, b: string): number {
  const valuesOf = (text: string) => {
    const features = featuresOf(text);
    return new Map(
      [...features.count].map(([hash, count]) => [hash, features.weight.get(hash)! * (1 + Math.log(count))]),
    );
  };
  const [x, y] = [valuesOf(a), valuesOf(b)];
  const norm = (values: Map<number, number>) =>
    Math.sqrt([...values.values()].reduce((sum, v) => sum + v * v, 0));
  let dot = 0;
  for (const [hash, value] of x) dot += value * (y.get(hash) ?? 0);
  return dot === 0 ? 0 : dot / (norm(x) * norm(y));
}

export function embedLocalHashReference(text: string, dimensions = 1024): Float32Array {
  const features = featuresOf(text);
  const vector = new Float32Array(dimensions);
  for (const [hash, count] of features.count) {
    const value = features.weight.get(hash)! * (1 + Math.log(count));
    // bucket from the low bits, sign from the top bit: independent enough after the finaliser
    vector[hash % dimensions] += (hash & 0x80000000) !== 0 ? -value : value;
  }
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += vector[i] * vector[i];
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < dimensions; i++) vector[i] *= scale;
  }
  return vector;
}

function featuresOf(text: string): FeatureCounts {
  const features = new FeatureCounts();
  const words = foldGerman(text).match(/[\p{L}\p{N}]+/gu) ?? [];
  let previous: string | undefined;
  for (const word of words) {
    if (STOPWORDS.has(word)) {
      features.add(hashRange(word, 0, word.length, SEED_STOPWORD), STOPWORD_WEIGHT);
      continue;
    }
    const stem = stemGerman(word);
    const scale = lengthWeight(stem.length);
    features.add(hashRange(stem, 0, stem.length, SEED_WORD), WORD_WEIGHT * scale);
    if (previous !== undefined) {
      const pair = `${previous} ${stem}`;
      features.add(hashRange(pair, 0, pair.length, SEED_BIGRAM), BIGRAM_WEIGHT);
    }
    previous = stem;
    if (word.length < NGRAM_MIN_LENGTH) continue;
    const padded = `<${word}>`;
    let count = 0;
    for (const n of NGRAM_SIZES) count += Math.max(0, padded.length - n + 1);
    const weight = (NGRAM_WEIGHT * scale) / Math.sqrt(count);
    for (const n of NGRAM_SIZES) {
      for (let i = 0; i + n <= padded.length; i++) {
        features.add(hashRange(padded, i, i + n, SEED_NGRAM + n), weight);
      }
    }
  }
  return features;
}
