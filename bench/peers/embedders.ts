/**
 * The same deterministic embedder for every contender: cpe's local hashing embedder (src/embed/local-hash.ts,
 * the function its embed step calls), wrapped as a LangChain `Embeddings` and as a LlamaIndex `BaseEmbedding`,
 * so all three ingestion pipelines spend the same CPU per character embedded and differ only in what they do
 * around it. The text is prepared by the same rules as cpe's embed step (src/embed/prepare.ts): white space and
 * dot leaders collapsed, and no length cap, since the local embedder has no context window. cpe additionally
 * puts the document title and heading path in front of a chunk (one short line); the peers know neither.
 */
import { Embeddings } from '@langchain/core/embeddings';
import { BaseEmbedding } from 'llamaindex';
import { embedLocalHash, LOCAL_EMBEDDER_DIMENSIONS } from '../../src/embed/local-hash.js';
import { DEFAULT_MAX_EMBED_CHARS, embedCharLimit, prepareEmbedText } from '../../src/embed/prepare.js';

const LIMIT = embedCharLimit({ kind: 'local' }, DEFAULT_MAX_EMBED_CHARS);
const prepare = (text: string) => prepareEmbedText(text, LIMIT);

export class LocalHashLangChainEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments(documents: string[]): Promise<number[][]> {
    return documents.map((d) => Array.from(embedLocalHash(prepare(d), LOCAL_EMBEDDER_DIMENSIONS)));
  }
  async embedQuery(document: string): Promise<number[]> {
    return Array.from(embedLocalHash(prepare(document), LOCAL_EMBEDDER_DIMENSIONS));
  }
}

export class LocalHashLlamaIndexEmbedding extends BaseEmbedding {
  constructor() {
    super();
    this.embedInfo = { dimensions: LOCAL_EMBEDDER_DIMENSIONS };
  }
  async getTextEmbedding(text: string): Promise<number[]> {
    return Array.from(embedLocalHash(prepare(text), LOCAL_EMBEDDER_DIMENSIONS));
  }
  override getTextEmbeddings = async (texts: string[]): Promise<number[][]> =>
    texts.map((t) => Array.from(embedLocalHash(prepare(t), LOCAL_EMBEDDER_DIMENSIONS)));
}
