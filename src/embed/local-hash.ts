import { defaultEmbedThreads, sharedLocalEmbedPool } from './local-pool.js';
import { prepareChunkInputs } from './prepare.js';
import type { Embedder } from './types.js';
import { normalizeInPlace } from './vector-blob.js';

/**
 * The name stored with every vector (chunks.embedding_model, the embedding cache, collection stamps). v2 changed
 * the features and weights, so its vectors are not comparable with v1's: a new name makes a collection built
 * with v1 refuse v2 queries with a clear mismatch instead of returning noise.
 */
export const LOCAL_EMBEDDER_MODEL = 'local-hash-v2';
export const LOCAL_EMBEDDER_DIMENSIONS = 1024;

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

/**
 * Frequent German (and a few English) function words, folded like the text: they say little about a chunk's
 * topic, so they count a small fraction of a content word. A fixed list, because there is no corpus-wide
 * document frequency to learn it from (an embedder must not depend on what else was ingested).
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    'aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes andern ' +
    'anders auch auf aus bei bin bis bist bzw da damit dann darf das dass daß dazu dein deine deinem deinen ' +
    'deiner deines dem demselben den denn denselben der derer derselbe derselben des desselben dessen dich ' +
    'die dies diese diesem diesen dieser dieses dieselbe dieselben dasselbe dir doch dort du durch dürfen ein ' +
    'eine einem einen einer eines einig einige einigem einigen einiger einiges einmal er es etc etwas euch ' +
    'euer eure eurem euren eurer eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich ' +
    'ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres im in indem ins ist jede jedem jeden jeder jedes jene ' +
    'jenem jenen jener jenes jetzt kann kein keine keinem keinen keiner keines können könnte machen man ' +
    'manche manchem manchen mancher manches mein meine meinem meinen meiner meines mich mir mit muss musste ' +
    'müssen nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen seiner seines selbst ' +
    'sich sie sind so solche solchem solchen solcher solches soll sollen sollte sondern sonst sowie über um ' +
    'und uns unser unsere unserem unseren unseres unter viel vom von vor während wann war waren warst was ' +
    'weg weil weiter welche welchem welchen welcher welches wenn werde werden wie wieder will wir wird ' +
    'wirst wo wollen wollte wurde wurden würde würden z b u a zu zum zur zwar zwischen ' +
    'the a an and or of to in is are was be for on with as by at this that it from'
  )
    .split(' ')
    .map(foldGerman),
);

/**
 * Light German stemming on a folded word (after CISTEM, Weissweiler & Fraser 2017): strips the inflection
 * endings -em, -er, -nd, then -e, -s, -n, -t repeatedly, never below four letters, so "Urlaubs", "Urlaube"
 * and "Urlaub" meet, as do "Kündigung" and "Kündigungen". Over-stemming is harmless here: the same rule runs
 * on queries and chunks, and it only has to make word forms meet, not produce real words.
 */
export function stemGerman(word: string): string {
  let end = word.length;
  while (end > 3) {
    const last = word.charCodeAt(end - 1);
    if (end > 5) {
      const pair = word.slice(end - 2, end);
      if (pair === 'em' || pair === 'er' || pair === 'nd') {
        end -= 2;
        continue;
      }
    }
    // e, s, n, t
    if (last === 101 || last === 115 || last === 110 || last === 116) {
      end--;
      continue;
    }
    break;
  }
  return end === word.length ? word : word.slice(0, end);
}

/** A letter or a number: what words are made of. */
const WORD_CHAR = /[\p{L}\p{N}]/u;

/** WORD_CHAR for each code unit below 256: once folded (ä to ae, ß to ss), nearly all of a German text. */
const WORD_LATIN1 = Uint8Array.from({ length: 256 }, (_, c) =>
  WORD_CHAR.test(String.fromCharCode(c)) ? 1 : 0,
);

/**
 * The runs of letters and numbers of a text: what `text.match(/[\p{L}\p{N}]+/gu)` finds (the tests hold it to
 * that), by a scan with a table for the first 256 code points. The expression spent most of its time in V8's
 * range search for the Unicode classes, ~10% of an embedding thread's time.
 */
function wordsOf(text: string): string[] {
  const words: string[] = [];
  let start = -1;
  for (let i = 0; i < text.length; ) {
    const unit = text.charCodeAt(i);
    let width = 1;
    let word: boolean;
    if (unit < 256) {
      word = WORD_LATIN1[unit] === 1;
    } else {
      // a surrogate pair is one code point; a lone surrogate is neither letter nor number
      const next = unit >= 0xd800 && unit <= 0xdbff ? text.charCodeAt(i + 1) : 0;
      width = next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
      word = WORD_CHAR.test(text.slice(i, i + width));
    }
    if (word) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      words.push(text.slice(start, i));
      start = -1;
    }
    i += width;
  }
  if (start >= 0) words.push(text.slice(start));
  return words;
}

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

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const LT = 60; // '<' and '>' around a word for its n-grams, so that prefixes and suffixes are features too
const GT = 62;

/** FNV-1a state after the code units [start, end) of s. */
function fnv(h: number, s: string, start: number, end: number): number {
  for (let i = start; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h;
}

/** murmur3's fmix32 on an FNV state: FNV's low bits alone spread poorly over 1024 buckets. */
function finish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The feature hash of a whole string: FNV-1a seeded per feature family, then the finaliser. */
const hashString = (s: string, seed: number) => finish(fnv((FNV_OFFSET ^ seed) >>> 0, s, 0, s.length));

/** The hash of the n-gram at [start, start + n) of `<word>`, without building that string. */
function hashNgram(word: string, start: number, n: number): number {
  const last = word.length + 1; // index of '>' in the padded word
  let h = (FNV_OFFSET ^ (SEED_NGRAM + n)) >>> 0;
  for (let i = start; i < start + n; i++) {
    const c = i === 0 ? LT : i === last ? GT : word.charCodeAt(i - 1);
    h = Math.imul(h ^ c, FNV_PRIME);
  }
  return finish(h);
}

/**
 * Per distinct feature (32-bit hash) of one text: the weight of one occurrence (the largest seen) and how often it
 * occurs, in the order first seen. An open-addressing table over typed arrays, reused from text to text (a
 * generation stamp marks the slots of the current text, so nothing is cleared): a text has thousands of features,
 * and two Maps keyed by numbers above 2^30 (boxed in V8) made most of the embedder's time and garbage.
 */
class FeatureTable {
  private capacity = 1 << 13;
  private keys = new Int32Array(this.capacity);
  private stamps = new Uint32Array(this.capacity);
  private weights = new Float64Array(this.capacity);
  private counts = new Float64Array(this.capacity);
  /** slots in the order their features were first seen */
  private order = new Int32Array(this.capacity);
  private size = 0;
  private generation = 1;

  reset(): void {
    this.size = 0;
    if (++this.generation === 0x100000000) {
      this.stamps.fill(0);
      this.generation = 1;
    }
  }

  add(hash: number, weight: number): void {
    if (this.size * 2 >= this.capacity) this.grow();
    const key = hash | 0;
    const mask = this.capacity - 1;
    let slot = key & mask;
    for (;;) {
      if (this.stamps[slot] !== this.generation) {
        this.stamps[slot] = this.generation;
        this.keys[slot] = key;
        this.weights[slot] = weight;
        this.counts[slot] = 1;
        this.order[this.size++] = slot;
        return;
      }
      if (this.keys[slot] === key) {
        // the same feature can come with different weights (n-grams of words of different lengths): keep the largest
        if (weight > this.weights[slot]!) this.weights[slot] = weight;
        this.counts[slot]!++;
        return;
      }
      slot = (slot + 1) & mask;
    }
  }

  /** The distinct features' hashes, in the order first seen. */
  hashes(): Uint32Array {
    const hashes = new Uint32Array(this.size);
    for (let i = 0; i < this.size; i++) hashes[i] = this.keys[this.order[i]!]! >>> 0;
    return hashes;
  }

  /** What the feature adds to its bucket for the current text (see addTo), unsigned; 0 when the text lacks it. */
  valueOf(hash: number): number {
    const key = hash | 0;
    const mask = this.capacity - 1;
    for (let slot = key & mask; this.stamps[slot] === this.generation; slot = (slot + 1) & mask) {
      if (this.keys[slot] === key) return this.valueAt(slot);
    }
    return 0;
  }

  /** weight × (1 + ln occurrences) of the feature in `slot` (most occur once: no logarithm then) */
  private valueAt(slot: number): number {
    const count = this.counts[slot]!;
    return count === 1 ? this.weights[slot]! : this.weights[slot]! * (1 + Math.log(count));
  }

  /** The length of the current text's feature vector before hashing: each feature a dimension of its own. */
  norm(): number {
    let sum = 0;
    for (let i = 0; i < this.size; i++) {
      const value = this.valueAt(this.order[i]!);
      sum += value * value;
    }
    return Math.sqrt(sum);
  }

  /** Adds each feature's weight × (1 + ln occurrences) to its bucket, signed by its top bit, in first-seen order. */
  addTo(vector: Float32Array): void {
    const dimensions = vector.length;
    for (let i = 0; i < this.size; i++) {
      const slot = this.order[i]!;
      const hash = this.keys[slot]! >>> 0;
      const value = this.weights[slot]! * (1 + Math.log(this.counts[slot]!));
      // bucket from the low bits, sign from the top bit: independent enough after the finaliser
      vector[hash % dimensions] += (hash & 0x80000000) !== 0 ? -value : value;
    }
  }

  private grow(): void {
    const { keys, weights, counts, order, size } = this;
    this.capacity *= 2;
    this.keys = new Int32Array(this.capacity);
    this.stamps = new Uint32Array(this.capacity);
    this.weights = new Float64Array(this.capacity);
    this.counts = new Float64Array(this.capacity);
    this.order = new Int32Array(this.capacity);
    this.size = 0;
    this.generation = 1;
    const mask = this.capacity - 1;
    for (let i = 0; i < size; i++) {
      const old = order[i]!;
      let slot = keys[old]! & mask;
      while (this.stamps[slot] === 1) slot = (slot + 1) & mask;
      this.stamps[slot] = 1;
      this.keys[slot] = keys[old]!;
      this.weights[slot] = weights[old]!;
      this.counts[slot] = counts[old]!;
      this.order[this.size++] = slot;
    }
  }
}

/** one per thread: embedLocalHash runs to completion, so calls never share it */
const table = new FeatureTable();

/**
 * The embedded default embedder: hashed features of German text (the "hashing trick"), weighted and
 * L2-normalised. Deterministic, no download, no server. Features: stemmed content words (weighted by length),
 * stopwords (a tenth of that), adjacent content-word pairs, and the character 3- and 4-grams of each content
 * word, which let compounds meet their parts ("Arbeitsschutzgesetz" ~ "Arbeitsschutz"). Each distinct feature
 * counts 1 + ln(occurrences) times its weight, so a word repeated ten times does not drown the rest. Signed
 * hashing (an independent hash bit picks + or -) makes bucket collisions cancel out on average. It captures
 * lexical similarity, not meaning: it is named local-hash-v2 wherever a model name is shown or stored, so
 * nobody mistakes it for a neural model. The hashes are FNV-1a over UTF-16 code units, seeded per feature
 * family, with a murmur3 finaliser; a pair is hashed as "previous stem, space, stem" and an n-gram as part of
 * "<word>", without building either string (test/unit/embed/local-hash-reference.ts builds them: same bits).
 */
export function embedLocalHash(text: string, dimensions: number = LOCAL_EMBEDDER_DIMENSIONS): Float32Array {
  const vector = new Float32Array(dimensions);
  embedLocalHashInto(text, vector);
  return vector;
}

/**
 * Vectors of several texts, as views of one buffer: a 4 KB Float32Array each is an allocation, zeroing and
 * bookkeeping of its own for V8 (a tenth of an embedding thread's time), and the thread sends one buffer back.
 */
export function embedLocalHashMany(
  texts: readonly string[],
  dimensions: number,
  signal?: AbortSignal,
): Float32Array[] {
  const block = new Float32Array(texts.length * dimensions);
  const vectors: Float32Array[] = [];
  for (let i = 0; i < texts.length; i++) {
    signal?.throwIfAborted();
    const vector = block.subarray(i * dimensions, (i + 1) * dimensions);
    embedLocalHashInto(texts[i]!, vector);
    vectors.push(vector);
  }
  return vectors;
}

/** embedLocalHash written into `out`, which is all zeros; its length is the dimensions. */
function embedLocalHashInto(text: string, out: Float32Array): void {
  collectFeatures(foldGerman(text));
  table.addTo(out);
  normalizeInPlace(out);
}

/**
 * The distinct features of a text as embedLocalHash finds them (their 32-bit hashes, before they are put into
 * buckets), in the order first seen.
 */
export function localHashFeatures(text: string): Uint32Array {
  collectFeatures(foldGerman(text));
  return table.hashes();
}

/** Whether texts have a feature of a query, and how much they share (see localHashFeatureMatcher). */
export interface LocalHashFeatureMatcher {
  /**
   * false for a text that cannot have one: it holds none of the strings one of them would (featureNeedles), which
   * a substring search finds at a fraction of the cost of making the text's features; true for one that may
   */
  mayShare(text: string): boolean;
  /**
   * The cosine of the query's and the text's features with no two features in one dimension: what the embedder's
   * cosine estimates through 1,024 shared buckets. 0 when they share no feature.
   */
  score(text: string): number;
}

/**
 * Compares texts with `query` by their features (both as localHashFeatures finds them). Two texts of positive
 * cosine need not share one: all features share 1,024 buckets, and a chunk's thousands of features fill most of
 * them, with random signs; for a short query the buckets' noise outweighs what it shares with a chunk (a number or
 * an acronym found in one chunk of a law scored below 0 with it, below hundreds that share nothing). The quick
 * test (featureNeedles) lets a query that shares nothing with a collection be tested against thousands of its
 * chunks.
 */
export function localHashFeatureMatcher(query: string): LocalHashFeatureMatcher {
  const folded = foldGerman(query);
  collectFeatures(folded);
  const features = table.hashes();
  const values = Float64Array.from(features, (feature) => table.valueOf(feature));
  const norm = table.norm();
  const needles = featureNeedles(wordsOf(folded));
  const mayShare = (text: string) => needles.some((needle) => text.includes(needle));
  const score = (text: string) => {
    const foldedText = foldGerman(text);
    if (norm === 0 || !mayShare(foldedText)) return 0;
    collectFeatures(foldedText);
    let dot = 0;
    for (let i = 0; i < features.length; i++) dot += values[i]! * table.valueOf(features[i]!);
    return dot === 0 ? 0 : dot / (norm * table.norm());
  };
  return {
    mayShare: (text) => mayShare(foldGerman(text)),
    score,
  };
}

/**
 * Strings of which a folded text holds at least one if it has a feature of these (folded) words: a stopword or a
 * content word too short for n-grams, itself (a short word is its own stem); of a longer content word, its
 * 3-grams with the '<' '>' around the word left out. Each feature of a longer word holds one of them: its stem
 * starts with the word's first two letters, a pair holds the stem, and every 4-gram holds a 3-gram.
 */
function featureNeedles(words: readonly string[]): string[] {
  const needles = new Set<string>();
  for (const word of words) {
    if (STOPWORDS.has(word) || word.length < NGRAM_MIN_LENGTH) {
      needles.add(word);
      continue;
    }
    needles.add(word.slice(0, 2));
    for (let i = 0; i + 3 <= word.length; i++) needles.add(word.slice(i, i + 3));
    needles.add(word.slice(-2));
  }
  return [...needles];
}

/** Fills the table with the features of a folded text and their weights: the one place features are made. */
function collectFeatures(folded: string): void {
  table.reset();
  const words = wordsOf(folded);
  /** FNV state after "previous stem + space", for the pair feature of the next content word */
  let pairPrefix = 0;
  let hasPrevious = false;
  // indexed loops and the n-grams in a function of their own: V8 compiles this in each embedding thread, and a
  // for-of (an implicit try) with every feature's table insert inlined took it 50-70 ms per thread
  for (let w = 0; w < words.length; w++) {
    const word = words[w]!;
    if (STOPWORDS.has(word)) {
      table.add(hashString(word, SEED_STOPWORD), STOPWORD_WEIGHT);
      continue;
    }
    const stem = stemGerman(word);
    const scale = lengthWeight(stem.length);
    table.add(hashString(stem, SEED_WORD), WORD_WEIGHT * scale);
    if (hasPrevious) table.add(finish(fnv(pairPrefix, stem, 0, stem.length)), BIGRAM_WEIGHT);
    pairPrefix = Math.imul(fnv((FNV_OFFSET ^ SEED_BIGRAM) >>> 0, stem, 0, stem.length) ^ 32, FNV_PRIME);
    hasPrevious = true;
    if (word.length >= NGRAM_MIN_LENGTH) addNgrams(word, scale);
  }
}

/** The character n-grams of a content word, sharing NGRAM_WEIGHT × its length scale. */
function addNgrams(word: string, scale: number): void {
  const padded = word.length + 2;
  let count = 0;
  for (let k = 0; k < NGRAM_SIZES.length; k++) count += Math.max(0, padded - NGRAM_SIZES[k]! + 1);
  const weight = (NGRAM_WEIGHT * scale) / Math.sqrt(count);
  for (let k = 0; k < NGRAM_SIZES.length; k++) {
    const n = NGRAM_SIZES[k]!;
    for (let i = 0; i + n <= padded; i++) table.add(hashNgram(word, i, n), weight);
  }
}

export interface LocalEmbedderOptions {
  dimensions?: number;
  /**
   * Worker threads that embed (CPE_EMBED_THREADS); default one per core, 0 = on the calling thread. Small
   * calls (a search query) run on the calling thread while no worker is running: starting one would cost more.
   */
  threads?: number;
}

/**
 * Up to this many characters in one call are embedded on the calling thread (well under a millisecond), unless
 * the workers are running already (an ingestion run starts them with its embed step): then every call goes to
 * them, so the calling thread never runs the embedder often enough for V8 to compile it a further time (~90 ms
 * of compiler work on the shared corpus, for a few thousand characters of small documents).
 */
const IN_THREAD_MAX_CHARS = 1000;

/** Whether a configuration with these Ollama hosts (CPE_OLLAMA_HOST) embeds locally: none, or only blank ones. */
export const usesLocalEmbedder = (ollamaHosts: readonly string[]): boolean =>
  ollamaHosts.every((host) => host.trim() === '');

export function createLocalEmbedder(options: LocalEmbedderOptions = {}): Embedder {
  const dimensions = options.dimensions ?? LOCAL_EMBEDDER_DIMENSIONS;
  const threads = Math.floor(options.threads ?? defaultEmbedThreads());
  // the pool's workers start on the first call large enough to need them
  const pool = threads > 0 ? sharedLocalEmbedPool(threads, LOCAL_EMBEDDER_MODEL) : undefined;
  const inThread = (texts: readonly string[]) => {
    if (pool!.threads > 0) return false;
    let chars = 0;
    for (const text of texts) chars += text.length;
    return chars <= IN_THREAD_MAX_CHARS;
  };
  return {
    model: LOCAL_EMBEDDER_MODEL,
    dimensions,
    kind: 'local',
    location: 'in-process',
    async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
      if (!pool || inThread(texts)) return embedLocalHashMany(texts, dimensions, signal);
      return pool.embed(texts, dimensions, signal);
    },
    async prepareAndEmbed(inputs: string[], maxChars: number, signal?: AbortSignal) {
      if (!pool || inThread(inputs)) {
        const { texts, hashes } = prepareChunkInputs(inputs, maxChars);
        return { hashes, vectors: embedLocalHashMany(texts, dimensions, signal) };
      }
      return pool.prepareAndEmbed(inputs, maxChars, dimensions, signal);
    },
    warmUp() {
      pool?.warmUp();
    },
  };
}
