/**
 * The same deterministic embedder for every contender: cpe's local-hash-v1 (src/embed/local-hash.ts), wrapped as
 * a LangChain `Embeddings` and as a LlamaIndex `BaseEmbedding`, so all three ingestion pipelines spend the same
 * CPU per chunk on embeddings and differ only in what they do around it.
 */
import { Embeddings } from '@langchain/core/embeddings';
import { BaseEmbedding } from 'llamaindex';
import { embedLocalHash, LOCAL_EMBEDDER_DIMENSIONS } from '../../src/embed/local-hash.js';
import { prepareEmbedText } from '../../src/embed/prepare.js';

/** What cpe's embed step sends for a chunk (capped at max_embed_chars, 800 by default): the peers send the same. */
const prepare = (text: string) => prepareEmbedText(text);

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
