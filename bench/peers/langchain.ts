/**
 * LangChain.js as an ingestion contender, the way its documentation builds a RAG index: DirectoryLoader with a
 * TextLoader for .md and .txt, RecursiveCharacterTextSplitter (2000 characters, 200 overlap — cpe's 2000 / 10%),
 * the shared deterministic embedder, MemoryVectorStore. Re-ingest goes through LangChain's indexing API
 * (`index()` with a record manager and the file path as source id, no cleanup since MemoryVectorStore cannot
 * delete), which loads and splits everything again, hashes every chunk and skips the ones it has seen.
 *
 * The record manager is a Map behind LangChain's RecordManagerInterface, the same as @langchain/community's
 * InMemoryRecordManager: @langchain/community 1.1.29 cannot be installed next to cpe's typeorm 1.x (its optional
 * peer wants typeorm ^0.3), and its SQL record managers need Postgres or a typeorm 0.3 SQLite.
 */

import { DirectoryLoader } from '@langchain/classic/document_loaders/fs/directory';
import { TextLoader } from '@langchain/classic/document_loaders/fs/text';
import { MemoryVectorStore } from '@langchain/classic/vectorstores/memory';
import {
  index,
  type ListKeyOptions,
  type RecordManagerInterface,
  type UpdateOptions,
} from '@langchain/core/indexing';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import { timed } from '../lib/timed.js';
import { LocalHashLangChainEmbeddings } from './embedders.js';
import type { IngestArgs, IngestResult } from './types.js';

/** Map-backed record manager (semantics of @langchain/community/indexes/memory InMemoryRecordManager). */
export class MapRecordManager implements RecordManagerInterface {
  readonly records = new Map<string, { updatedAt: number; groupId: string | null }>();
  async createSchema(): Promise<void> {}
  async getTime(): Promise<number> {
    return Date.now();
  }
  async update(keys: string[], options: UpdateOptions = {}): Promise<void> {
    const updatedAt = await this.getTime();
    const { timeAtLeast, groupIds: _groupIds } = options;
    if (timeAtLeast && updatedAt < timeAtLeast)
      throw new Error(`time sync issue: ${updatedAt} < ${timeAtLeast}`);
    const groupIds = _groupIds ?? keys.map(() => null);
    if (groupIds.length !== keys.length) throw new Error('keys and groupIds differ in length');
    keys.forEach((key, i) => {
      const old = this.records.get(key);
      this.records.set(key, { updatedAt, groupId: groupIds[i] ?? old?.groupId ?? null });
    });
  }
  async exists(keys: string[]): Promise<boolean[]> {
    return keys.map((k) => this.records.has(k));
  }
  async listKeys(options: ListKeyOptions = {}): Promise<string[]> {
    const { before, after, limit, groupIds } = options;
    const out: string[] = [];
    for (const [key, record] of this.records) {
      if (before !== undefined && record.updatedAt >= before) continue;
      if (after !== undefined && record.updatedAt <= after) continue;
      if (groupIds && !groupIds.includes(record.groupId)) continue;
      out.push(key);
      if (limit !== undefined && out.length >= limit) break;
    }
    return out;
  }
  async deleteKeys(keys: string[]): Promise<void> {
    for (const k of keys) this.records.delete(k);
  }
}

const loaderFor = (source: string) =>
  new DirectoryLoader(
    source,
    { '.md': (p) => new TextLoader(p), '.txt': (p) => new TextLoader(p) },
    true,
    'ignore',
  );

const splitter = () => new RecursiveCharacterTextSplitter({ chunkSize: 2000, chunkOverlap: 200 });

export async function langchainIngest(args: IngestArgs): Promise<IngestResult> {
  const embeddings = new LocalHashLangChainEmbeddings();
  const store = new MemoryVectorStore(embeddings);
  if (!args.reingest) {
    const { value, ms, cpuMs, mainCpuMs } = await timed(async () => {
      const docs = await loaderFor(args.source).load();
      const chunks = await splitter().splitDocuments(docs);
      await store.addDocuments(chunks);
      return { docs, chunks };
    });
    const { docs, chunks } = value;
    return {
      ms,
      cpuMs,
      mainCpuMs,
      documents: docs.length,
      bytes: docs.reduce((n, d) => n + Buffer.byteLength(d.pageContent), 0),
      chunks: chunks.length,
      vectors: store.memoryVectors.length,
      notes: 'load, split, embed, MemoryVectorStore.addDocuments',
    };
  }
  const recordManager = new MapRecordManager();
  const pass = async () => {
    const { value, ...clock } = await timed(async () => {
      const docs = await loaderFor(args.source).load();
      const chunks = await splitter().splitDocuments(docs);
      const result = await index({
        docsSource: chunks,
        recordManager,
        vectorStore: store,
        // no cleanup: MemoryVectorStore cannot delete, and an unchanged folder has nothing to clean up
        options: { sourceIdKey: 'source' },
      });
      return { docs, chunks, result };
    });
    return { ...clock, ...value };
  };
  await pass();
  const second = await pass();
  return {
    ms: second.ms,
    cpuMs: second.cpuMs,
    mainCpuMs: second.mainCpuMs,
    documents: second.docs.length,
    bytes: second.docs.reduce((n, d) => n + Buffer.byteLength(d.pageContent), 0),
    chunks: second.chunks.length,
    vectors: store.memoryVectors.length,
    workDone: second.result.numAdded + second.result.numUpdated,
    workUnit: 'chunks embedded',
    notes: `index(): ${JSON.stringify(second.result)}`,
  };
}
