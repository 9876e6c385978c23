/**
 * pdf.js's worker module, with two changes: the soft hyphen stays in a page's text, and text content that pdf.js
 * stops reading on an error says so.
 *
 * pdf.js 5.4 leaves every format character (Unicode category Cf) out of the text it extracts, U+00AD SOFT HYPHEN
 * among them. A PDF writer that maps the hyphen it draws at a line end to U+00AD (as PDF 32000 §14.8.2.2.3 asks:
 * "Verant-" / "wortung") then yields "Verant" / "wortung", two words that no search finds as one; with the soft
 * hyphen kept, normalize.ts joins the word.
 *
 * With stopAtErrors off (cpe reads what it can of a damaged file), pdf.js ends a page's text at the first error in
 * its content stream (a stream it cannot parse: 100,000 nested arrays overflow its parser) and only logs that it
 * did, so the page came out empty as if it held no text. The changed module puts a marker item (TEXT_ERROR_FIELD:
 * the error) among the page's text items there; pdf.ts makes it the page's warning, and a file none of whose pages
 * could be read a CORRUPT_FILE error.
 *
 * cpe loads a copy of the worker module with these changes, through pdf.js's own hook for a worker module loaded by
 * the caller (globalThis.pdfjsWorker). The copy is made once per machine and pdf.js version, in the temporary
 * folder; where the code to change is not found (another pdf.js) or the copy cannot be written, pdf.js runs as it
 * comes.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** the field of the marker item that stands where pdf.js stopped reading a page's text, with the error */
export const TEXT_ERROR_FIELD = 'cpeTextError';

/** where pdf.js ends a page's text on an error (stopAtErrors off), keeping what it read before the error */
const TEXT_ERROR_IGNORED = 'if (this.options.ignoreErrors) {\n        warn(`getTextContent - ignoring errors';

const CHANGES: ReadonlyArray<readonly [original: string, changed: string]> = [
  [
    'if (category.isInvisibleFormatMark) {\n          continue;',
    'if (category.isInvisibleFormatMark && glyph.unicode !== "\\u00ad") {\n          continue;',
  ],
  [
    TEXT_ERROR_IGNORED,
    TEXT_ERROR_IGNORED.replace(
      '{',
      `{\n        textContent.items.push({ str: "", ${TEXT_ERROR_FIELD}: String(reason) });`,
    ),
  ],
];

/** The error a text item marks (see TEXT_ERROR_FIELD), or undefined for text. */
export const textErrorOf = (item: object): string | undefined => {
  const error = (item as Record<string, unknown>)[TEXT_ERROR_FIELD];
  return typeof error === 'string' ? error : undefined;
};

let installed: Promise<boolean> | undefined;

/** Makes pdf.js in this process use the changed worker module; true when it does. Once per process. */
export function installPdfWorker(): Promise<boolean> {
  installed ??= (async () => {
    const holder = globalThis as { pdfjsWorker?: unknown };
    if (holder.pdfjsWorker) return true;
    try {
      const root = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
      const source = readFileSync(join(root, 'legacy/build/pdf.worker.mjs'), 'utf8');
      if (!CHANGES.every(([original]) => source.includes(original))) return false;
      const patched = CHANGES.reduce((text, [original, changed]) => text.replace(original, changed), source);
      const hash = createHash('sha256').update(patched).digest('hex').slice(0, 16);
      const file = join(tmpdir(), `cpe-pdf.worker-${hash}.mjs`);
      if (!existsSync(file) || readFileSync(file, 'utf8') !== patched) {
        const temporary = `${file}.${process.pid}.tmp`;
        writeFileSync(temporary, patched);
        renameSync(temporary, file); // atomic: a concurrent process imports a whole file or none
      }
      holder.pdfjsWorker = await import(pathToFileURL(file).href);
      return true;
    } catch {
      return false;
    }
  })();
  return installed;
}
