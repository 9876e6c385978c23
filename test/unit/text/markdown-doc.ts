import { DocumentBuilder } from '../../../src/extract/document-builder.js';
import type { ExtractedDocument } from '../../../src/extract/types.js';

/**
 * A small Markdown reader for the text-library tests and the chunking bench: front matter skipped, ATX
 * headings, fenced code, pipe tables, list items and paragraphs become blocks. The project's extractor
 * (src/extract/markdown.ts) is used instead wherever it exists; this keeps the text library testable on
 * its own.
 */
export function markdownDocument(markdown: string): ExtractedDocument {
  const b = new DocumentBuilder('md');
  b.startPage(1);
  let lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  if (lines[0]?.trim() === '---') {
    const close = lines.findIndex((l, i) => i > 0 && (l.trim() === '---' || l.trim() === '...'));
    if (close > 0) lines = lines.slice(close + 1);
  }
  let para: string[] = [];
  let item: string[] | null = null;
  const flush = () => {
    if (para.length > 0) b.add('paragraph', para.join('\n'));
    para = [];
    if (item) b.add('list_item', item.join('\n'));
    item = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      flush();
      const code: string[] = [];
      let j = i + 1;
      while (j < lines.length && !(lines[j] as string).trim().startsWith(fence[1] as string))
        code.push(lines[j++] as string);
      b.add('code', code.join('\n'));
      i = j;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      flush();
      b.add('heading', (heading[2] as string).replace(/\s*\{[^}]*\}\s*$/, ''), (heading[1] as string).length);
      continue;
    }
    if (/^\s*:::/.test(line)) {
      flush();
      continue;
    }
    if (/^\s*\|/.test(line)) {
      flush();
      const rows: string[] = [];
      let j = i;
      while (j < lines.length && /^\s*\|/.test(lines[j] as string)) rows.push(lines[j++] as string);
      b.add('table', rows.join('\n'));
      i = j - 1;
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    if (/^\s{0,3}([-*+]|\d+[.)])\s+/.test(line)) {
      flush();
      item = [line.trim()];
      continue;
    }
    if (item) item.push(line.trim());
    else para.push(line.trim());
  }
  flush();
  return b.build();
}
