/**
 * pdf.js's worker module, with one change: the soft hyphen stays in a page's text.
 *
 * pdf.js 5.4 leaves every format character (Unicode category Cf) out of the text it extracts, U+00AD SOFT HYPHEN
 * among them. A PDF writer that maps the hyphen it draws at a line end to U+00AD (as PDF 32000 §14.8.2.2.3 asks:
 * "Verant-" / "wortung") then yields "Verant" / "wortung", two words that no search finds as one; with the soft
 * hyphen kept, normalize.ts joins the word. cpe loads a copy of the worker module with that one condition changed,
 * through pdf.js's own hook for a worker module loaded by the caller (globalThis.pdfjsWorker). The copy is made once
 * per machine and pdf.js version, in the temporary folder; where the code to change is not found (another pdf.js)
 * or the copy cannot be written, pdf.js runs as it comes.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ORIGINAL = 'if (category.isInvisibleFormatMark) {\n          continue;';
const PATCHED = 'if (category.isInvisibleFormatMark && glyph.unicode !== "\\u00ad") {\n          continue;';

let installed: Promise<boolean> | undefined;

/** Makes pdf.js in this process use the patched worker module; true when it does. Once per process. */
export function installPdfWorker(): Promise<boolean> {
  installed ??= (async () => {
    const holder = globalThis as { pdfjsWorker?: unknown };
    if (holder.pdfjsWorker) return true;
    try {
      const root = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
      const source = readFileSync(join(root, 'legacy/build/pdf.worker.mjs'), 'utf8');
      if (!source.includes(ORIGINAL)) return false;
      const patched = source.replace(ORIGINAL, PATCHED);
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
