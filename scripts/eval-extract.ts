/**
 * npm run eval:extract — measures extraction on ../shared/corpus and prints Markdown tables:
 * 1. text recall of our PDF text against `pdftotext` (poppler-utils): word-level, multiset, per PDF and
 *    overall (target >= 0.97); beside it precision, the share of our words that pdftotext has too, so a
 *    change that raises recall by adding junk shows, and the recall of prose words alone (runs of two or
 *    more letters): in formulas pdftotext spaces indices and exponents off their base ("S 1", "π1 (X")
 *    where we keep them on it ("S1", "π1(X"), which counts against us in the word recall but not there. pdftotext's own line-end hyphenation is joined the same way as ours first, so
 *    the figure measures lost text, not a different hyphenation policy. pdftotext reads the crop box like
 *    pdf.js (see referenceText): printer's marks outside the visible page are not text anyone reads. Running
 *    headers, footers and page numbers are taken out of pdftotext's text by the extractor's own rules first
 *    (withoutFurniture), since the extractor leaves them out on purpose.
 * 2. outcome per hostile or odd file (everything in bad/, plus the odd PDF/TXT/MD files): code, message, ms,
 *    through the isolated dispatcher exactly as the pipeline calls it.
 * Always exits 0: it reports, it does not judge.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpeError } from '../src/errors.js';
import { disposeIsolatedWorkers, extractIsolated } from '../src/extract/isolate.js';
import { joinLineEndHyphenation } from '../src/extract/normalize.js';
import { removePageFurniture } from '../src/extract/pdf-furniture.js';
import type { ExtractedDocument } from '../src/extract/types.js';

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const corpus = resolve(projectRoot, '../shared/corpus');

/** Files outside bad/ that test robustness rather than ordinary extraction. */
const ODD_FILES = [
  'pdf/pdfjs_xref_command_missing.pdf',
  'pdf/pdfjs_helloworld-bad.pdf',
  'pdf/pdfjs_issue6069_junk-before-header.pdf',
  'pdf/pdfjs_secHandler_empty-userpw.pdf',
  'pdf/pdfjs_issue7665_encrypt-indirect.pdf',
  'pdf/de_docspell_protected-test123_copy-no.pdf',
  'pdf/de_afu_TechnikFragenkatalogKlasseE.pdf',
  'pdf/de_kreuzberg_image-only-german-pdf.pdf',
  'pdf/docspell_scanner_pdf13.pdf',
  'pdf/de_onlyoffice_new-de-DE-blank.pdf',
  'pdf/unstructured_rotated-page-90.pdf',
  'pdf/tika_testPDF_deeplyEmbeddedAttachments.pdf',
  'pdf/pdfjs_freeculture_352p.pdf',
  'pdf/pdfjs_standard_fonts.pdf',
  'txt/de_afu_Quellen_latin1_crlf.txt',
  'txt/tika_testTXT_win-1252.txt',
  'txt/unstructured_fake-text-all-whitespace.txt',
  'txt/unstructured_fake-text-utf-16-le_nobom.txt',
  'txt/unstructured_fake-text-utf-16_bom.txt',
  'md/de_afu_Checkliste_Kursstart_7bytes.md',
  'md/de_unstructured_umlauts-non-utf8.md',
  'md/unstructured_codeblock.md',
  'md/unstructured_simple-table.md',
];

interface Outcome {
  document?: ExtractedDocument;
  code: string;
  message: string;
  ms: number;
}

async function run(path: string): Promise<Outcome> {
  const started = Date.now();
  try {
    const document = await extractIsolated(path);
    const ocr = document.ocrNeeded ? ', OCR needed' : '';
    const message = `${document.pages.length} page(s), ${document.text.length} chars${ocr}`;
    return { document, code: 'OK', message, ms: Date.now() - started };
  } catch (error) {
    const ms = Date.now() - started;
    const message = error instanceof Error ? error.message.replace(`${path}: `, '') : String(error);
    if (error instanceof CpeError && /extractor module .* cannot be loaded/.test(error.message)) {
      return { code: 'extractor missing', message, ms };
    }
    return { code: error instanceof CpeError ? error.code : 'UNEXPECTED', message, ms };
  }
}

function words(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const raw of text.normalize('NFC').split(/\s+/)) {
    const word = raw.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '').toLowerCase();
    if (word !== '') counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return counts;
}

/** Runs of two or more letters: the words of the prose, without numbers, symbols and formula variables. */
function letterWords(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const word of text
    .normalize('NFC')
    .toLowerCase()
    .match(/\p{L}[\p{L}\p{M}]+/gu) ?? []) {
    counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return counts;
}

function recall(reference: Map<string, number>, ours: Map<string, number>): { hit: number; total: number } {
  let hit = 0;
  let total = 0;
  for (const [word, count] of reference) {
    total += count;
    hit += Math.min(count, ours.get(word) ?? 0);
  }
  return { hit, total };
}

function pdftotext(path: string, extra: string[] = []): string | undefined {
  try {
    return execFileSync('pdftotext', ['-enc', 'UTF-8', ...extra, path, '-'], {
      maxBuffer: 256 * 1024 * 1024,
    }).toString('utf8');
  } catch {
    return undefined;
  }
}

/**
 * pdftotext's text of what a viewer shows: pages whose crop box is smaller than the media box are read
 * through a crop window (-x/-y/-W/-H; its -cropbox flag does not clip text), as pdf.js clips to the crop
 * box. Printer's marks outside the visible page (slug lines, margin line numbers) are not document text.
 */
function referenceText(path: string): string {
  let boxes = '';
  try {
    boxes = execFileSync('pdfinfo', ['-box', '-f', '1', '-l', '100000', path]).toString('utf8');
  } catch {
    return pdftotext(path) ?? '';
  }
  const box = (kind: string, page: number): number[] | undefined => {
    const match = new RegExp(`^Page\\s+${page} ${kind}:\\s+(.+)$`, 'm').exec(boxes);
    return match?.[1]?.trim().split(/\s+/).map(Number);
  };
  const pages = Number(/^Pages:\s+(\d+)/m.exec(boxes)?.[1] ?? 0);
  const cropped: number[] = [];
  for (let page = 1; page <= pages; page++) {
    const media = box('MediaBox', page);
    const crop = box('CropBox', page);
    if (media && crop?.some((v, i) => Math.abs(v - media[i]!) > 0.5)) cropped.push(page);
  }
  if (cropped.length === 0) return pdftotext(path) ?? '';
  const parts: string[] = [];
  for (let page = 1; page <= pages; page++) {
    const range = ['-f', String(page), '-l', String(page)];
    const media = box('MediaBox', page)!;
    const crop = box('CropBox', page)!;
    const window = cropped.includes(page)
      ? [
          ['-x', crop[0]! - media[0]!],
          ['-y', media[3]! - crop[3]!],
          ['-W', crop[2]! - crop[0]!],
          ['-H', crop[3]! - crop[1]!],
        ].flatMap(([flag, value]) => [String(flag), String(Math.round(Number(value)))])
      : [];
    parts.push(pdftotext(path, [...range, ...window]) ?? '');
  }
  return parts.join('\n');
}

/**
 * pdftotext's text without the running headers, footers and page numbers the extractor leaves out, found by the
 * same rules (src/extract/pdf-furniture.ts) in pdftotext's pages (form feeds) and blocks (blank lines): the recall
 * measures text lost, not furniture dropped on purpose.
 */
function withoutFurniture(text: string): string {
  const pages = text.split('\f').map((page, i) => ({
    number: i + 1,
    paragraphs: edgeLinesApart(page.split(/\n\s*\n/).filter((block) => block.trim() !== '')).map((block) => ({
      lines: block.split('\n').map((line) => ({ text: line, size: 10 })),
    })),
  }));
  removePageFurniture(pages);
  return pages
    .map((page) => page.paragraphs.map((p) => p.lines.map((l) => l.text).join('\n')).join('\n\n'))
    .join('\f');
}

/**
 * A page's blocks with the first line of its first block and the last line of its last one as blocks of their own:
 * pdftotext often glues a running header or footer to the paragraph next to it ("...the Conger\n88 FREE CULTURE"),
 * where the extractor, which sees the line's position, finds it at the page's edge.
 */
function edgeLinesApart(blocks: string[]): string[] {
  if (blocks.length === 0) return blocks;
  const out = [...blocks];
  const first = out[0]!.split('\n');
  if (first.length > 1) out.splice(0, 1, first[0]!, first.slice(1).join('\n'));
  const last = out[out.length - 1]!.split('\n');
  if (last.length > 1) out.splice(out.length - 1, 1, last.slice(0, -1).join('\n'), last[last.length - 1]!);
  return out;
}

const cell = (value: string) => value.replace(/\|/g, '\\|').replace(/\s+/g, ' ').slice(0, 160);

async function main(): Promise<void> {
  if (!existsSync(join(corpus, 'MANIFEST.tsv'))) {
    console.log(`No corpus at ${corpus}; nothing to measure.`);
    return;
  }
  const hasPdftotext = pdftotext(join(corpus, 'pdf/pdfjs_helloworld-bad.pdf')) !== undefined;

  console.log('## PDF text recall against pdftotext\n');
  if (!hasPdftotext) {
    console.log('pdftotext not found (apt-get install -y poppler-utils); recall not measured.\n');
  } else {
    console.log('| file | pdftotext words | recall | prose-word recall | our words | precision |');
    console.log('|---|---:|---:|---:|---:|---:|');
    let hits = 0;
    let total = 0;
    let proseHits = 0;
    let proseTotal = 0;
    let oursHits = 0;
    let oursTotal = 0;
    for (const name of readdirSync(join(corpus, 'pdf'))
      .filter((n) => n.endsWith('.pdf'))
      .sort()) {
      const path = join(corpus, 'pdf', name);
      const referenceString = joinLineEndHyphenation(withoutFurniture(referenceText(path)));
      const reference = words(referenceString);
      const referenceWords = [...reference.values()].reduce((a, b) => a + b, 0);
      if (referenceWords < 20) continue; // scans, blank pages: nothing to recall
      const outcome = await run(path);
      const ours = words(outcome.document?.text ?? '');
      const r = recall(reference, ours);
      const p = recall(ours, reference);
      const prose = recall(letterWords(referenceString), letterWords(outcome.document?.text ?? ''));
      hits += r.hit;
      total += r.total;
      proseHits += prose.hit;
      proseTotal += prose.total;
      oursHits += p.hit;
      oursTotal += p.total;
      const note = outcome.document ? '' : ` (${outcome.code})`;
      const precision = p.total > 0 ? (p.hit / p.total).toFixed(3) : '-';
      const share = (hit: number, all: number) => (hit / Math.max(all, 1)).toFixed(3);
      console.log(
        `| ${name} | ${r.total} | ${share(r.hit, r.total)}${note} | ${share(prose.hit, prose.total)} | ${p.total} | ${precision} |`,
      );
    }
    const share = (hit: number, all: number) => (hit / Math.max(all, 1)).toFixed(3);
    console.log(
      `| **all text PDFs** | ${total} | **${share(hits, total)}** | ${share(proseHits, proseTotal)} | ${oursTotal} | **${share(oursHits, oursTotal)}** |\n`,
    );
  }

  console.log('## Hostile and odd files -> outcome (isolated dispatcher, 30 s / 1024 MB limits)\n');
  console.log('| file | outcome | message | ms |');
  console.log('|---|---|---|---:|');
  const files = [
    ...readdirSync(join(corpus, 'bad'))
      .sort()
      .map((n) => `bad/${n}`),
    ...ODD_FILES.filter((f) => existsSync(join(corpus, f))),
  ];
  for (const relative of files) {
    const outcome = await run(join(corpus, relative));
    console.log(`| ${relative} | ${outcome.code} | ${cell(outcome.message)} | ${outcome.ms} |`);
  }
}

main()
  .catch((error) => console.error(error))
  .finally(() => disposeIsolatedWorkers());
