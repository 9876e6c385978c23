/**
 * Chunking bench: cpe's chunker (structure + segments + German sentences + token counts + chunks) against
 * LangChain's RecursiveCharacterTextSplitter (chunkSize 2000, chunkOverlap 200) on the same extracted
 * German text. Extraction is done once, before timing: cpe gets the ExtractedDocument (text + blocks),
 * LangChain the same text; cpe's time includes everything chunkDocument does (heading tree, sentences,
 * token counts, packing, chunk objects). Runs are interleaved, alternating which side goes first, so
 * machine noise hits both alike; the table shows medians. Quality figures come from src/text/quality.ts
 * for both.
 *
 * Standalone: `npx tsx bench/chunking.ts [--rounds N] [--corpus DIR]`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RecursiveCharacterTextSplitter } from '@langchain/textsplitters';
import type { ExtractedDocument } from '../src/extract/types.js';
import { chunkDocument, defaultChunkConfig, tinyChunkChars } from '../src/text/chunk.js';
import { type ChunkQuality, chunkQuality, locateChunks, mergeChunkQuality } from '../src/text/quality.js';
import { buildSections } from '../src/text/structure.js';
import { markdownDocument } from '../test/unit/text/markdown-doc.js';
import { timed } from './lib/timed.js';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MIN_BYTES = 5 * 1024 * 1024;

type MarkdownExtractor = (bytes: Uint8Array, file: string, options: unknown) => Promise<ExtractedDocument>;

/** The project's Markdown extractor when it exists, else the small reader of the text-library tests. */
async function markdownExtractor(): Promise<{
  name: string;
  extract: (text: string, file: string) => Promise<ExtractedDocument>;
}> {
  const modulePath = path.join(projectRoot, 'src/extract/markdown.ts');
  if (existsSync(modulePath)) {
    const mod = (await import(pathToFileURL(modulePath).href)) as { extractMarkdown?: MarkdownExtractor };
    const types = (await import(pathToFileURL(path.join(projectRoot, 'src/extract/types.ts')).href)) as {
      defaultExtractOptions: unknown;
    };
    const extract = mod.extractMarkdown;
    if (extract) {
      return {
        name: 'src/extract/markdown.ts',
        extract: (text, file) => extract(new TextEncoder().encode(text), file, types.defaultExtractOptions),
      };
    }
  }
  return { name: 'test-local Markdown reader', extract: async (text) => markdownDocument(text) };
}

/** German filler in the style of a training handbook, used only when the corpus folder is absent. */
function generatedCorpus(bytes: number): string[] {
  const subjects = [
    'Die Auszubildende',
    'Der Betrieb',
    'Die Ausbilderin',
    'Das Team',
    'Die Prüfungskommission',
  ];
  const verbs = ['dokumentiert', 'bespricht', 'plant', 'bewertet', 'überprüft'];
  const objects = [
    'den Ausbildungsnachweis',
    'die Lernziele',
    'den Arbeitsschutz',
    'die Auftragsklärung',
    'das Qualitätsmanagement',
  ];
  const tails = [
    'gemäß § 14 Abs. 2 BBiG.',
    'z. B. am 1. Oktober 2024 im 2. Ausbildungsjahr.',
    'd. h. vor Beginn der praktischen Phase.',
    'bis spätestens 31.12.2024, ggf. auch früher.',
    'und hält das Ergebnis schriftlich fest.',
  ];
  const docs: string[] = [];
  let total = 0;
  let n = 0;
  while (total < bytes) {
    const parts = [`# Handbuch Teil ${n + 1}`];
    for (let k = 1; k <= 6; k++) {
      parts.push(`## Kapitel ${k}`);
      for (let s = 1; s <= 3; s++) {
        parts.push(`### Abschnitt ${k}.${s}`);
        for (let p = 0; p < 4; p++) {
          const sentences: string[] = [];
          for (let q = 0; q < 5; q++) {
            const i = n + k * 7 + s * 3 + p * 5 + q;
            sentences.push(
              `${subjects[i % 5]} ${verbs[(i >> 1) % 5]} ${objects[(i >> 2) % 5]} ${tails[(i * 3) % 5]}`,
            );
          }
          parts.push(sentences.join(' '));
        }
      }
    }
    const doc = parts.join('\n\n');
    docs.push(doc);
    total += Buffer.byteLength(doc);
    n++;
  }
  return docs;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

const pct = (x: number | null) => (x === null ? 'n/a' : `${(x * 100).toFixed(1)}%`);

export async function benchChunking(
  opts: { corpusDir?: string; rounds?: number } = {},
): Promise<{ rows: Array<Record<string, string | number>>; markdown: string }> {
  const rounds = Math.max(1, opts.rounds ?? 7);
  const corpusDir = opts.corpusDir ?? path.resolve(projectRoot, '../shared/corpus/md');
  const extractor = await markdownExtractor();

  let sources: Array<{ file: string; text: string }>;
  let corpusName: string;
  if (existsSync(corpusDir)) {
    sources = readdirSync(corpusDir)
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => ({ file: f, text: readFileSync(path.join(corpusDir, f), 'utf8') }));
    corpusName = `${sources.length} Markdown files from ${path.relative(projectRoot, corpusDir)}`;
  } else {
    sources = generatedCorpus(MIN_BYTES).map((text, i) => ({ file: `generated-${i}.md`, text }));
    corpusName = `generated German handbook text (${sources.length} documents)`;
  }
  const unique: ExtractedDocument[] = [];
  for (const s of sources) {
    try {
      const doc = await extractor.extract(s.text, s.file);
      if (doc.text.trim() !== '') unique.push(doc);
    } catch {
      // files the extractor refuses (broken encodings) are not chunking material
    }
  }
  if (unique.length === 0) throw new Error(`no usable documents in ${corpusDir}`);
  // repeat the corpus up to 5 MB; each copy is marked with a counter so no two texts are identical
  const docs: ExtractedDocument[] = [...unique];
  let bytes = unique.reduce((a, d) => a + Buffer.byteLength(d.text), 0);
  for (let copy = 2; bytes < MIN_BYTES; copy++) {
    for (const d of unique) {
      const text = `${d.text}\n\nKopie ${copy}.`;
      docs.push({ ...d, text });
      bytes += Buffer.byteLength(text);
    }
  }
  const config = defaultChunkConfig;
  const splitter = new RecursiveCharacterTextSplitter({ chunkSize: 2000, chunkOverlap: 200 });

  const runCpe = () => {
    let n = 0;
    for (const d of docs) n += chunkDocument(d, { config }).length;
    return n;
  };
  const runPeer = async () => {
    let n = 0;
    for (const d of docs) n += (await splitter.splitText(d.text)).length;
    return n;
  };
  // warm-up, then interleaved timed rounds; the order alternates (cpe first, then LangChain first) so
  // neither side always runs right after the other's garbage
  runCpe();
  await runPeer();
  const cpeMs: number[] = [];
  const peerMs: number[] = [];
  // CPU time of the process as well: on a machine shared with other work, wall time also counts the
  // time the process waited for a core, and CPU time does not
  const cpeCpuMs: number[] = [];
  const peerCpuMs: number[] = [];
  let cpeChunks = 0;
  let peerChunks = 0;
  const timeCpe = async () => {
    const { value, ms, cpuMs } = await timed(async () => runCpe());
    cpeChunks = value;
    cpeMs.push(ms);
    cpeCpuMs.push(cpuMs);
  };
  const timePeer = async () => {
    const { value, ms, cpuMs } = await timed(runPeer);
    peerChunks = value;
    peerMs.push(ms);
    peerCpuMs.push(cpuMs);
  };
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      await timeCpe();
      await timePeer();
    } else {
      await timePeer();
      await timeCpe();
    }
  }
  const mb = bytes / (1024 * 1024);
  const cpeMBs = mb / (median(cpeMs) / 1000);
  const peerMBs = mb / (median(peerMs) / 1000);

  // quality on the unique documents
  const tinyChars = tinyChunkChars(config);
  const cpeParts: ChunkQuality[] = [];
  const peerParts: ChunkQuality[] = [];
  let unlocated = 0;
  for (const d of unique) {
    const sections = buildSections(d);
    const chunks = chunkDocument(d, { config, sections });
    cpeParts.push(
      chunkQuality(d.text, chunks, { maxChars: config.maxChars, tinyChars, blocks: d.blocks, sections }),
    );
    const contents = await splitter.splitText(d.text);
    const located = locateChunks(d.text, contents);
    const found = located.filter((x): x is { start: number; end: number } => x !== null);
    unlocated += located.length - found.length;
    peerParts.push(chunkQuality(d.text, found, { maxChars: 2000, tinyChars, blocks: d.blocks, sections }));
  }
  const cq = mergeChunkQuality(cpeParts);
  const pq = mergeChunkQuality(peerParts);

  const rows: Array<Record<string, string | number>> = [
    { metric: 'throughput (median MB/s)', cpe: cpeMBs.toFixed(1), langchain: peerMBs.toFixed(1) },
    { metric: 'median ms per round', cpe: median(cpeMs).toFixed(0), langchain: median(peerMs).toFixed(0) },
    { metric: 'speed ratio cpe/LangChain', cpe: (cpeMBs / peerMBs).toFixed(2), langchain: '1.00' },
    {
      metric: 'speed ratio by median CPU time',
      cpe: (median(peerCpuMs) / median(cpeCpuMs)).toFixed(2),
      langchain: '1.00',
    },
    { metric: 'chunks per round', cpe: cpeChunks, langchain: peerChunks },
    { metric: 'quality: chunks (unique docs)', cpe: cq.chunks, langchain: pq.chunks },
    { metric: 'mean chunk chars', cpe: cq.meanChars.toFixed(0), langchain: pq.meanChars.toFixed(0) },
    { metric: 'starts mid-word', cpe: pct(cq.midWordStart), langchain: pct(pq.midWordStart) },
    { metric: 'ends mid-word', cpe: pct(cq.midWordEnd), langchain: pct(pq.midWordEnd) },
    {
      metric: 'ends at sentence/paragraph end (>= 98%)',
      cpe: pct(cq.endsAtSentenceOrParagraph),
      langchain: pct(pq.endsAtSentenceOrParagraph),
    },
    {
      metric: 'ends with a heading whose body follows (<= 1%)',
      cpe: pct(cq.headingAtEnd),
      langchain: pct(pq.headingAtEnd),
    },
    { metric: `tiny chunks < ${tinyChars} chars (<= 5%)`, cpe: pct(cq.tiny), langchain: pct(pq.tiny) },
    { metric: 'over 1.1 x cap (2200 chars) (0)', cpe: cq.overCap, langchain: pq.overCap },
    {
      metric: 'overlap between consecutive chunks of the same section (5-15%)',
      cpe: pct(cq.overlapContinued),
      langchain: pct(pq.overlapContinued),
    },
    {
      metric: 'overlap over all consecutive pairs (none is added across a section start)',
      cpe: pct(cq.overlapAll),
      langchain: pct(pq.overlapAll),
    },
    {
      metric: 'heading path of the start text (100%)',
      cpe: pct(cq.headingPathCorrect),
      langchain: 'none carried',
    },
    {
      metric: 'exact offsets known',
      cpe: pct(cq.offsetsExact),
      langchain: `not reported (${unlocated} of ${pq.chunks + unlocated} not found by search)`,
    },
  ];
  const header = `Chunking: ${corpusName}, repeated to ${mb.toFixed(1)} MB of extracted text (${docs.length} documents), ${rounds} interleaved rounds; extraction: ${extractor.name}; cpe config ${JSON.stringify(config)}; LangChain RecursiveCharacterTextSplitter chunkSize 2000, chunkOverlap 200`;
  const lines = [
    header,
    '',
    '| metric | cpe | LangChain |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.metric} | ${r.cpe} | ${r.langchain} |`),
  ];
  return { rows, markdown: lines.join('\n') };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const rounds = arg('--rounds');
  const corpusDir = arg('--corpus');
  benchChunking({ rounds: rounds ? Number(rounds) : undefined, corpusDir }).then(
    (r) => console.log(r.markdown),
    (e: unknown) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
