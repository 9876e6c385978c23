/**
 * Case 1, three ways: cpe's chunker, LangChain's RecursiveCharacterTextSplitter and LlamaIndex.TS's
 * SentenceSplitter on the same extracted German Markdown, interleaved (cpe, LangChain, LlamaIndex, cpe, ...),
 * medians, with the boundary-quality figures of src/text/quality.ts for all three. bench/chunking.ts (cpe vs
 * LangChain with every quality figure) is the detailed table; this one adds LlamaIndex at comparable settings:
 * SentenceSplitter counts tokens with its own tokenizer, so its chunkSize is 2000 characters converted with the
 * characters-per-token ratio measured on this very text, and its overlap is 10% of that.
 *
 * Standalone: `npx tsx bench/chunking-peers.ts` (BENCH_CHUNK_ROUNDS, BENCH_QUICK=1).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import { SentenceSplitter } from 'llamaindex';
import { extractMarkdown } from '../src/extract/markdown.js';
import type { ExtractedDocument } from '../src/extract/types.js';
import { chunkDocument, defaultChunkConfig, tinyChunkChars } from '../src/text/chunk.js';
import { type ChunkQuality, chunkQuality, locateChunks, mergeChunkQuality } from '../src/text/quality.js';
import { buildSections } from '../src/text/structure.js';
import { projectRoot } from './lib/child.js';
import { generatedDocument } from './lib/corpus.js';
import { envNumber, fmt, MB, median, pct, ratio, table } from './lib/stats.js';

const MIN_BYTES = 5 * 1024 * 1024;

async function loadDocuments(corpusDir: string): Promise<{ label: string; unique: ExtractedDocument[] }> {
  const texts: Array<{ file: string; bytes: Uint8Array }> = [];
  let label: string;
  if (existsSync(corpusDir)) {
    for (const f of readdirSync(corpusDir).filter((n) => n.endsWith('.md')).sort()) {
      texts.push({ file: f, bytes: readFileSync(path.join(corpusDir, f)) });
    }
    label = `${texts.length} Markdown files of ${path.relative(projectRoot, corpusDir)}`;
  } else {
    for (let i = 0, total = 0; total < MIN_BYTES; i++) {
      const text = generatedDocument(i, 20_000);
      total += Buffer.byteLength(text);
      texts.push({ file: `generated-${i}.md`, bytes: new TextEncoder().encode(text) });
    }
    label = `${texts.length} generated German Markdown documents (../shared/corpus absent)`;
  }
  const unique: ExtractedDocument[] = [];
  for (const t of texts) {
    try {
      const doc = await extractMarkdown(t.bytes, t.file);
      if (doc.text.trim() !== '') unique.push(doc);
    } catch {
      // files the extractor refuses are not chunking material
    }
  }
  return { label, unique };
}

export async function benchChunkingPeers(opts: { corpusDir?: string; rounds?: number; sampleMb?: number } = {}) {
  const rounds = opts.rounds ?? envNumber('BENCH_CHUNK_ROUNDS', 3, 2);
  const sampleBytes = (opts.sampleMb ?? envNumber('BENCH_CHUNK_PEER_MB', 0.5, 0.2)) * MB;
  const { label, unique } = await loadDocuments(opts.corpusDir ?? path.resolve(projectRoot, '../shared/corpus/md'));
  // LlamaIndex's SentenceSplitter runs at a few tens of KB/s, so all three chunk a sample of whole documents
  // (taken evenly over the corpus) instead of the 5 MB of bench/chunking.ts
  const docs: ExtractedDocument[] = [];
  let bytes = 0;
  const bySize = [...unique].sort((a, b) => a.text.length - b.text.length);
  for (let i = 0; bytes < sampleBytes && docs.length < bySize.length; i++) {
    // alternate small and large documents so the sample is not all short files
    const d = i % 2 === 0 ? bySize[i >> 1]! : bySize[bySize.length - 1 - (i >> 1)]!;
    if (bytes + Buffer.byteLength(d.text) > sampleBytes * 1.5 && docs.length > 0) continue;
    docs.push(d);
    bytes += Buffer.byteLength(d.text);
  }

  const config = defaultChunkConfig;
  const langchain = new RecursiveCharacterTextSplitter({ chunkSize: 2000, chunkOverlap: 200 });
  // LlamaIndex's token budget equivalent to 2000 characters on this text
  const probe = new SentenceSplitter({ chunkSize: 512, chunkOverlap: 0 });
  const sample = docs.map((d) => d.text.slice(0, 20_000)).join('\n\n');
  const charsPerToken = sample.length / probe.tokenSize(sample);
  const llamaTokens = Math.round(2000 / charsPerToken);
  const llamaindex = new SentenceSplitter({ chunkSize: llamaTokens, chunkOverlap: Math.round(llamaTokens / 10) });

  const contenders = [
    { name: 'cpe', run: () => docs.reduce((n, d) => n + chunkDocument(d, { config }).length, 0) },
    { name: 'LangChain RecursiveCharacterTextSplitter', run: async () => {
        let n = 0;
        for (const d of docs) n += (await langchain.splitText(d.text)).length;
        return n;
      } },
    { name: 'LlamaIndex SentenceSplitter', run: () => docs.reduce((n, d) => n + llamaindex.splitText(d.text).length, 0) },
  ];
  const times = contenders.map(() => [] as number[]);
  const chunks = contenders.map(() => 0);
  for (const c of contenders) await c.run(); // warm-up
  for (let r = 0; r < rounds; r++) {
    for (const [k, c] of contenders.entries()) {
      const t = performance.now();
      chunks[k] = await c.run();
      times[k]!.push(performance.now() - t);
    }
  }

  // boundary quality on the unique documents
  const tinyChars = tinyChunkChars(config);
  const parts: ChunkQuality[][] = contenders.map(() => []);
  const unlocated = contenders.map(() => 0);
  for (const d of docs) {
    const sections = buildSections(d);
    const opts = { maxChars: config.maxChars, tinyChars, blocks: d.blocks, sections };
    parts[0]!.push(chunkQuality(d.text, chunkDocument(d, { config, sections }), opts));
    for (const [k, contents] of [
      [1, await langchain.splitText(d.text)],
      [2, llamaindex.splitText(d.text)],
    ] as const) {
      const located = locateChunks(d.text, contents);
      const found = located.filter((x): x is { start: number; end: number } => x !== null);
      unlocated[k] = (unlocated[k] ?? 0) + located.length - found.length;
      parts[k]!.push(chunkQuality(d.text, found, opts));
    }
  }
  const quality = parts.map((p) => mergeChunkQuality(p));
  const mbs = times.map((t) => bytes / MB / (median(t) / 1000));
  const rows = contenders.map((c, k) => {
    const q = quality[k]!;
    return {
      contender: c.name,
      mbPerS: mbs[k]!,
      chunksPerRound: chunks[k]!,
      meanChars: q.meanChars,
      endsAtSentenceOrParagraph: q.endsAtSentenceOrParagraph,
      midWordStart: q.midWordStart,
      midWordEnd: q.midWordEnd,
      overCap: q.overCap,
      unlocated: unlocated[k]!,
    };
  });
  const markdown = [
    `**Case 1 — chunking, three ways**: a sample of ${docs.length} whole documents (${fmt(bytes / MB)} MB of extracted text) from ${label}, median of ${rounds} interleaved rounds after a warm-up. cpe: ${config.maxChars} characters max, ~${config.targetTokens} tokens, ${config.overlapRatio * 100}% overlap; LangChain: chunkSize 2000, chunkOverlap 200; LlamaIndex: chunkSize ${llamaTokens} tokens (2000 characters at ${charsPerToken.toFixed(2)} characters per token of its tokenizer on this text), chunkOverlap ${Math.round(llamaTokens / 10)}. Quality figures over the same documents; the peers' chunks are located in the text by search (they report no offsets).`,
    '',
    table(
      ['contender', 'MB/s', 'cpe/peer speed', 'chunks per round', 'mean chars', 'ends at sentence/paragraph', 'starts mid-word', 'ends mid-word', 'over 2200 chars'],
      rows.map((r, k) => [
        r.contender,
        fmt(r.mbPerS),
        k === 0 ? '-' : ratio(mbs[0]!, r.mbPerS),
        r.chunksPerRound,
        fmt(r.meanChars),
        pct(r.endsAtSentenceOrParagraph),
        pct(r.midWordStart),
        pct(r.midWordEnd),
        `${r.overCap}${r.unlocated ? ` (${r.unlocated} not located)` : ''}`,
      ]),
    ),
  ].join('\n');
  return { rows, markdown };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  benchChunkingPeers().then(
    (r) => console.log(r.markdown),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
