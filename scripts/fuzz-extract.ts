/**
 * Mutation fuzzing of the DOCX, PPTX and Markdown extractors: each round takes a real document, damages it the way
 * broken writers and truncated copies do (ranges of an XML part deleted, doubled or cut off; attribute values
 * replaced; closing tags dropped; control characters and stray markup inserted; a part removed) and extracts it in
 * this process. Every outcome must be a document or a cpe error naming the file; anything else (a TypeError from a
 * library, a hang) is a finding: its input is written to the output folder and the exit code is 1.
 *
 *   npx tsx scripts/fuzz-extract.ts [--rounds N] [--seed N] [--out DIR]
 *
 * Inputs: ../shared/corpus/{docx,pptx,md} when present, else examples/documents. Deterministic for a seed.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import { CpeError } from '../src/errors.js';
import { extractDocx } from '../src/extract/docx.js';
import { extractMarkdown } from '../src/extract/markdown.js';
import { extractPptx } from '../src/extract/pptx.js';
import { defaultExtractOptions } from '../src/extract/types.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '500' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string', default: path.join(root, '.fuzz') },
  },
});
const rounds = Number(values.rounds);
/** a JavaScript error's words in a cpe error's reason: a library tripped over the input, nobody said why */
const UNCLEAR = /Cannot read properties|is not a function|is not iterable|undefined|\[object /;
/** a round slower than this is a finding (hostile input must cost time in proportion to its size) */
const SLOW_MS = 5000;

let state = Number(values.seed) >>> 0 || 1;
/** xorshift32: the same damage for the same seed */
const random = (): number => {
  state ^= state << 13;
  state ^= state >>> 17;
  state ^= state << 5;
  return (state >>> 0) / 0x100000000;
};
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

function inputs(): string[] {
  const corpus = path.resolve(root, '../shared/corpus');
  const folders = existsSync(corpus)
    ? ['docx', 'pptx', 'md'].map((dir) => path.join(corpus, dir))
    : [path.join(root, 'examples/documents')];
  const files: string[] = [];
  for (const folder of folders) {
    for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
      if (entry.isFile() && /\.(docx|pptx|md)$/i.test(entry.name))
        files.push(path.join(entry.parentPath, entry.name));
    }
  }
  return files.sort();
}

const ATTRIBUTE_VALUES = ['', '-1', '999999999', 'x', '0', 'NaN', '&amp;', '1e309', '"'];
const INSERTS = ['\u0000', '\uFFFF', '&#0;', '&#xD800;', ']]>', '<![CDATA[', '<?x?>', '<!--', '<', '&'];

/** Text damaged in one of six ways. */
function damage(text: string): string {
  const at = Math.floor(random() * text.length);
  const end = Math.min(text.length, at + Math.floor(random() * 400));
  switch (Math.floor(random() * 6)) {
    case 0:
      return text.slice(0, at) + text.slice(end);
    case 1:
      return text.slice(0, end) + text.slice(at, end) + text.slice(end);
    case 2:
      return text.slice(0, at);
    case 3:
      return text.replace(/="[^"]*"/g, (value) => (random() < 0.05 ? `="${pick(ATTRIBUTE_VALUES)}"` : value));
    case 4:
      return text.replace(/<\/[^>]+>/g, (tag) => (random() < 0.03 ? '' : tag));
    default:
      return text.slice(0, at) + pick(INSERTS) + text.slice(at);
  }
}

/** A package with one to three of its XML parts damaged, and now and then one removed. */
function damagePackage(bytes: Uint8Array): Uint8Array {
  const parts = unzipSync(bytes);
  const xmlParts = Object.keys(parts).filter((name) => /\.(xml|rels)$/i.test(name));
  for (let k = 1 + Math.floor(random() * 3); k > 0; k--) {
    const name = pick(xmlParts);
    parts[name] = strToU8(damage(strFromU8(parts[name] as Uint8Array)));
  }
  if (random() < 0.1) delete parts[pick(xmlParts)];
  return zipSync(parts);
}

const MARKDOWN_RUNS = ['\n|a|b|\n|-|', '\n---\n', '\n```', '\n> ', '\n* ', '\n1. ', '\t', '\r', '\n#'];

function damageMarkdown(bytes: Uint8Array): Uint8Array {
  const run = random() < 0.3 ? pick(MARKDOWN_RUNS).repeat(Math.floor(random() * 200)) : '';
  return strToU8(damage(strFromU8(bytes)) + run);
}

const files = inputs();
const outcomes = new Map<string, number>();
const findings: string[] = [];
mkdirSync(values.out, { recursive: true });
for (let round = 0; round < rounds; round++) {
  const file = pick(files);
  const extension = path.extname(file).toLowerCase();
  const original = readFileSync(file);
  const bytes = extension === '.md' ? damageMarkdown(original) : damagePackage(original);
  const name = `fuzz${extension}`;
  const started = performance.now();
  let outcome: string;
  let finding = false;
  try {
    if (extension === '.docx') await extractDocx(bytes, name, defaultExtractOptions);
    else if (extension === '.pptx') await extractPptx(bytes, name, defaultExtractOptions);
    else await extractMarkdown(bytes, name, defaultExtractOptions);
    outcome = 'read';
  } catch (error) {
    if (error instanceof CpeError && error.message.startsWith(`${name}: `)) {
      outcome = `${error.code}: ${error.message
        .slice(name.length + 2)
        .replace(/\d+/g, 'N')
        .slice(0, 100)}`;
      // a library's own words about its code are no reason a user can act on
      finding = UNCLEAR.test(error.message);
    } else {
      finding = true;
      outcome = `NOT A CPE ERROR: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
    }
  }
  const ms = performance.now() - started;
  if (ms > SLOW_MS) {
    finding = true;
    outcome = `SLOW (${Math.round(ms)} ms): ${outcome}`;
  }
  if (finding) {
    const saved = path.join(values.out, `seed${values.seed}-round${round}${extension}`);
    writeFileSync(saved, bytes);
    findings.push(`${saved} (from ${path.basename(file)}): ${outcome}`);
  }
  const key = `${extension.slice(1)}  ${outcome}`;
  outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
}

console.log(`${rounds} rounds over ${files.length} documents, seed ${values.seed}\n`);
for (const [outcome, count] of [...outcomes].sort((a, b) => b[1] - a[1]))
  console.log(`${String(count).padStart(6)}  ${outcome}`);
if (findings.length > 0) {
  console.log(`\n${findings.length} finding(s):\n${findings.join('\n')}`);
  process.exitCode = 1;
}
