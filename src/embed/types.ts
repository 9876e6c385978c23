import { CpeError, ErrorCodes } from '../errors.js';

/** Turns texts into vectors. One instance per configured model; safe to call concurrently. */
export interface Embedder {
  /** the model name as stored in chunks.embedding_model and stamped on collections */
  readonly model: string;
  readonly dimensions: number;
  readonly kind: 'local' | 'ollama';
  /** where it runs, for `cpe status` and run headers (hosts for Ollama, 'in-process' for local) */
  readonly location: string;
  /**
   * One vector per text, in order. When single inputs fail for good (the server rejects exactly those), the
   * others still come back: the promise rejects with an EmbedInputError carrying the partial results.
   */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /**
   * Prepares each chunk input (chunkEmbedInput: context line and content) as chunkEmbedText does, capped at
   * maxChars, and returns the prepared texts' cache keys (textHash) with their vectors, all computed where the
   * embedder runs. For an embedder whose vector costs less than looking it up first (the local one, on worker
   * threads): the calling thread then neither prepares nor hashes the texts.
   */
  prepareAndEmbed?(inputs: string[], maxChars: number, signal?: AbortSignal): Promise<PreparedVectors>;
  /** starts what the first call would start (the local embedder's worker threads), without waiting for it */
  warmUp?(): void;
}

/**
 * Cache keys of prepared texts and their vectors, in the order of the inputs (see Embedder.prepareAndEmbed). The
 * vectors are unit length (a text without words: all zeros), so that callers need not check them.
 */
export interface PreparedVectors {
  hashes: string[];
  vectors: Float32Array[];
}

/**
 * Some inputs could not be embedded although the server answered for the others (a batch that kept failing
 * was split down to the bad inputs). `vectors[i]` is undefined exactly for the indexes in `failures`.
 */
export class EmbedInputError extends CpeError {
  readonly vectors: Array<Float32Array | undefined>;
  readonly failures: ReadonlyArray<{ index: number; message: string }>;

  constructor(
    model: string,
    vectors: Array<Float32Array | undefined>,
    failures: ReadonlyArray<{ index: number; message: string }>,
  ) {
    super(
      ErrorCodes.PROVIDER_ERROR,
      `${model}: ${failures.length} of ${vectors.length} inputs could not be embedded (first: ${failures[0]?.message ?? '?'})`,
      { retryable: false, details: { failed: failures.map((f) => f.index) } },
    );
    this.vectors = vectors;
    this.failures = failures;
  }
}

/** Known output sizes, so that collections can be set up before the first request. */
export const KNOWN_MODEL_DIMENSIONS: Readonly<Record<string, number>> = {
  'mxbai-embed-large': 1024,
  'bge-m3': 1024,
  'bge-large': 1024,
  'snowflake-arctic-embed': 1024,
  'snowflake-arctic-embed2': 1024,
  'nomic-embed-text': 768,
  'paraphrase-multilingual': 768,
  'granite-embedding:278m': 768,
  'all-minilm': 384,
};

/** 'mxbai-embed-large:latest' and 'mxbai-embed-large' are the same model for Ollama. */
export function knownDimensions(model: string): number | undefined {
  return KNOWN_MODEL_DIMENSIONS[model] ?? KNOWN_MODEL_DIMENSIONS[model.replace(/:latest$/, '')];
}
