/**
 * LlamaIndex.TS as an ingestion contender, the way its documentation builds an index: SimpleDirectoryReader with
 * its default readers (MarkdownReader for .md, TextFileReader for .txt), an IngestionPipeline of SentenceSplitter
 * (the token equivalent of 2000 characters, 10% overlap) and the shared deterministic embedder, into a
 * SimpleVectorStore. With a SimpleDocumentStore the pipeline's default UPSERTS strategy skips documents whose
 * id and hash it has seen: re-ingest uses that, with document ids made stable from the file path (LlamaIndex's
 * readers give random ids, which would defeat its deduplication).
 */
import { SimpleDirectoryReader } from '@llamaindex/readers/directory';
import { SentenceSplitter, Settings, SimpleDocumentStore, SimpleVectorStore } from 'llamaindex';
import { IngestionPipeline } from 'llamaindex/ingestion';
import { timed } from '../lib/timed.js';
import { LocalHashLlamaIndexEmbedding } from './embedders.js';
import type { IngestArgs, IngestResult } from './types.js';

/** Characters per token of LlamaIndex's default tokenizer on German text, measured by bench/chunking-peers.ts. */
export const DEFAULT_CHARS_PER_TOKEN = 3.5;

export interface LlamaIndexArgs extends IngestArgs {
  /** SentenceSplitter chunkSize in tokens (default: 2000 characters / DEFAULT_CHARS_PER_TOKEN) */
  chunkTokens?: number;
}

async function load(source: string) {
  const docs = await new SimpleDirectoryReader().loadData({ directoryPath: source });
  const perFile = new Map<string, number>();
  for (const doc of docs) {
    const file = String(doc.metadata.file_path ?? doc.metadata.file_name ?? '');
    const n = perFile.get(file) ?? 0;
    perFile.set(file, n + 1);
    doc.id_ = `${file}#${n}`;
  }
  return { docs, files: perFile.size };
}

export async function llamaindexIngest(args: LlamaIndexArgs): Promise<IngestResult> {
  const chunkSize = args.chunkTokens ?? Math.round(2000 / DEFAULT_CHARS_PER_TOKEN);
  const embedModel = new LocalHashLlamaIndexEmbedding();
  Settings.embedModel = embedModel;
  const vectorStore = new SimpleVectorStore({ embedModel });
  const docStore = args.reingest ? new SimpleDocumentStore() : undefined;
  const pipeline = () =>
    new IngestionPipeline({
      transformations: [
        new SentenceSplitter({ chunkSize, chunkOverlap: Math.round(chunkSize / 10) }),
        embedModel,
      ],
      vectorStore,
      docStore,
    });
  const pass = async () => {
    const { value, ...clock } = await timed(async () => {
      const { docs, files } = await load(args.source);
      const nodes = await pipeline().run({ documents: docs });
      return { docs, files, nodes };
    });
    return { ...clock, ...value };
  };
  if (args.reingest) await pass();
  const timedPass = await pass();
  const stored = Object.keys(
    (vectorStore as unknown as { data: { embeddingDict: object } }).data.embeddingDict,
  ).length;
  return {
    ms: timedPass.ms,
    cpuMs: timedPass.cpuMs,
    mainCpuMs: timedPass.mainCpuMs,
    documents: timedPass.files,
    bytes: timedPass.docs.reduce((n, d) => n + Buffer.byteLength(d.text), 0),
    chunks: args.reingest ? stored : timedPass.nodes.length,
    vectors: stored,
    ...(args.reingest ? { workDone: timedPass.nodes.length, workUnit: 'chunks embedded' } : {}),
    notes: `SentenceSplitter chunkSize ${chunkSize} tokens, overlap ${Math.round(chunkSize / 10)}; ${timedPass.docs.length} reader documents from ${timedPass.files} files`,
  };
}
