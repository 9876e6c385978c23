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
    for (const f of readdirSync(corpusDir)
      .filter((n) => n.endsWith('.md'))
      .sort()) {
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

export async function benchChunkingPeers(
  opts: { corpusDir?: string; rounds?: number; sampleMb?: number } = {},
) {
  const rounds = opts.rounds ?? envNumber('BENCH_CHUNK_ROUNDS', 3, 2);
  const sampleBytes = (opts.sampleMb ?? envNumber('BENCH_CHUNK_PEER_MB', 0.5, 0.2)) * MB;
  const { label, unique } = await loadDocuments(
    opts.corpusDir ?? path.resolve(projectRoot, '../shared/corpus/md'),
  );
  // LlamaIndex's SentenceSplitter runs at a few KB/s to tens of KB/s, so all three chunk a sample of whole
  // documents (every k-th of the corpus by name, none over a third of the sample) instead of 5 MB
  const candidates = unique.filter((d) => Buffer.byteLength(d.text) <= sampleBytes / 3);
  const stride = Math.max(1, Math.floor(candidates.length / 12));
  const docs: ExtractedDocument[] = [];
  let bytes = 0;
  for (let start = 0; start < stride && bytes < sampleBytes; start++) {
    for (let i = start; i < candidates.length && bytes < sampleBytes; i += stride) {
      docs.push(candidates[i]!);
      bytes += Buffer.byteLength(candidates[i]!.text);
    }
  }

  const config = defaultChunkConfig;
  const langchain = new RecursiveCharacterTextSplitter({ chunkSize: 2000, chunkOverlap: 200 });
  // LlamaIndex's token budget equivalent to 2000 characters on this text
  const probe = new SentenceSplitter({ chunkSize: 512, chunkOverlap: 0 });
  const sample = docs.map((d) => d.text.slice(0, 20_000)).join('\n\n');
  const charsPerToken = sample.length / probe.tokenSize(sample);
  const llamaTokens = Math.round(2000 / charsPerToken);
  const llamaindex = new SentenceSplitter({
    chunkSize: llamaTokens,
    chunkOverlap: Math.round(llamaTokens / 10),
  });

  // each run returns its chunks per document (offsets for cpe, strings for the peers); the last timed round's
  // output is what the quality figures look at, so the slow splitter runs only `rounds` times
  type Output = Array<Array<{ start: number; end: number }> | string[]>;
  const contenders: Array<{ name: string; run: () => Promise<Output> }> = [
    { name: 'cpe', run: async () => docs.map((d) => chunkDocument(d, { config })) },
    {
      name: 'LangChain RecursiveCharacterTextSplitter',
      run: async () => {
        const out: string[][] = [];
        for (const d of docs) out.push(await langchain.splitText(d.text));
        return out;
      },
    },
    { name: 'LlamaIndex SentenceSplitter', run: async () => docs.map((d) => llamaindex.splitText(d.text)) },
  ];
  const times = contenders.map(() => [] as number[]);
  const outputs: Output[] = contenders.map(() => []);
  // warm-up for the two fast ones (JIT); a LlamaIndex pass takes long enough to warm itself up
  await contenders[0]!.run();
  await contenders[1]!.run();
  for (let r = 0; r < rounds; r++) {
    for (const [k, c] of contenders.entries()) {
      const t = performance.now();
      outputs[k] = await c.run();
      times[k]!.push(performance.now() - t);
    }
  }
  const chunks = outputs.map((o) => o.reduce((n, perDoc) => n + perDoc.length, 0));

  // boundary quality
  const tinyChars = tinyChunkChars(config);
  const parts: ChunkQuality[][] = contenders.map(() => []);
  const unlocated = contenders.map(() => 0);
  docs.forEach((d, i) => {
    const sections = buildSections(d);
    const qualityOptions = { maxChars: config.maxChars, tinyChars, blocks: d.blocks, sections };
    parts[0]!.push(chunkQuality(d.text, chunkDocument(d, { config, sections }), qualityOptions));
    for (const k of [1, 2]) {
      const located = locateChunks(d.text, outputs[k]![i] as string[]);
      const found = located.filter((x): x is { start: number; end: number } => x !== null);
      unlocated[k] = (unlocated[k] ?? 0) + located.length - found.length;
      parts[k]!.push(chunkQuality(d.text, found, qualityOptions));
    }
  });
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
      [
        'contender',
        'MB/s',
        'cpe/peer speed',
        'chunks per round',
        'mean chars',
        'ends at sentence/paragraph',
        'starts mid-word',
        'ends mid-word',
        'over 2200 chars',
      ],
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
