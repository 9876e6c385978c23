import type { Embedder } from './types.js';

export const LOCAL_EMBEDDER_MODEL = 'local-hash-v1';
export const LOCAL_EMBEDDER_DIMENSIONS = 1024;

/**
 * Frequent German (and a few English) function words: they say little about a chunk's topic, so they count
 * a fraction of a content word instead of dominating short texts.
 */
const STOPWORDS = new Set(
  (
    'der die das den dem des ein eine einer eines einem einen und oder aber auch als am an auf aus bei bis ' +
    'durch fuer gegen hat haben hatte ich im in ist sind war waren wird werden wurde wurden kann koennen ' +
    'muss muessen mit nach nicht noch nur ob ohne sich sie er es wir ihr so um unter ueber vom von vor wie ' +
    'zu zum zur dass da dann denn doch hier wenn weil was wer welche welcher welches dies diese dieser ' +
    'dieses sein seine ihre man mehr sehr soll sollen sowie bzw etc z b u a ' +
    'the a an and or of to in is are was be for on with as by at this that it from'
  ).split(' '),
);

const WORD_WEIGHT = 1;
const STOPWORD_WEIGHT = 0.15;
const BIGRAM_WEIGHT = 0.5;
/** the character n-grams of one word share this much weight, so long words do not outweigh short ones */
const NGRAM_WEIGHT = 1.2;
const NGRAM_SIZES = [3, 4, 5];

/** Lower case, umlauts and ß folded the way German spelling variants write them (Maßnahme = Massnahme). */
export function foldGerman(text: string): string {
  return text
    .normalize('NFC')
    .toLowerCase()
    .replace(/ä/g, 'ae')
    .replace(/ö/g, 'oe')
    .replace(/ü/g, 'ue')
    .replace(/ß/g, 'ss');
}

/** FNV-1a over code units [start, end) of s, seeded so that each feature family hashes differently. */
function fnv(s: string, start: number, end: number, seed: number): number {
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

/** Adds weight to the hashed bucket; the sign comes from an independent bit so collisions cancel out on average. */
function add(vector: Float32Array, hash: number, weight: number): void {
  const index = hash % vector.length;
  vector[index] += (hash & 0x80000000) !== 0 ? -weight : weight;
}

const SEED_WORD = 0x1234;
const SEED_BIGRAM = 0x9e37;
const SEED_NGRAM = 0x51ed;

/**
 * The embedded default embedder: hashed word, word-bigram and character n-gram features (the "hashing trick"),
 * weighted and L2-normalised. Deterministic, no download, no server. It captures lexical similarity, including
 * German compounds through shared n-grams ("Arbeitsschutzgesetz" ~ "Arbeitsschutz"), not meaning: it is
 * named local-hash-v1 wherever a model name is shown or stored, so nobody mistakes it for a neural model.
 */
export function embedLocalHash(text: string, dimensions: number = LOCAL_EMBEDDER_DIMENSIONS): Float32Array {
  const vector = new Float32Array(dimensions);
  const words = foldGerman(text).match(/[\p{L}\p{N}]+/gu) ?? [];
  let previous: string | undefined;
  for (const word of words) {
    const stop = STOPWORDS.has(word);
    add(vector, fnv(word, 0, word.length, SEED_WORD), stop ? STOPWORD_WEIGHT : WORD_WEIGHT);
    if (previous !== undefined && !stop) {
      const pair = `${previous} ${word}`;
      add(vector, fnv(pair, 0, pair.length, SEED_BIGRAM), BIGRAM_WEIGHT);
    }
    if (!stop) previous = word;
    if (stop || word.length < 4) continue;
    const padded = `<${word}>`;
    let count = 0;
    for (const n of NGRAM_SIZES) count += Math.max(0, padded.length - n + 1);
    const weight = NGRAM_WEIGHT / Math.sqrt(count);
    for (const n of NGRAM_SIZES) {
      for (let i = 0; i + n <= padded.length; i++) add(vector, fnv(padded, i, i + n, SEED_NGRAM + n), weight);
    }
  }
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += vector[i] * vector[i];
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < dimensions; i++) vector[i] *= scale;
  }
  return vector;
}

export function createLocalEmbedder(options: { dimensions?: number } = {}): Embedder {
  const dimensions = options.dimensions ?? LOCAL_EMBEDDER_DIMENSIONS;
  return {
    model: LOCAL_EMBEDDER_MODEL,
    dimensions,
    kind: 'local',
    location: 'in-process',
    async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
      const out: Float32Array[] = [];
      for (const text of texts) {
        signal?.throwIfAborted();
        out.push(embedLocalHash(text, dimensions));
      }
      return out;
    },
  };
}
