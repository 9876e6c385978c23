import type { ExtractedDocument } from '../extract/types.js';
import { cutText } from '../text/cut.js';

/** A document's title: its metadata, then the first title/H1 (slide 1's title for decks), then the file name. */
export function chooseTitle(
  doc: Pick<ExtractedDocument, 'text' | 'blocks' | 'metadata'>,
  filename: string,
): string {
  const fromMeta = [
    doc.metadata.title,
    (doc.metadata.frontMatter as Record<string, unknown> | undefined)?.title,
  ].find((t): t is string => typeof t === 'string' && t.trim() !== '');
  if (fromMeta) return cutText(fromMeta.trim(), 300);
  const heading =
    doc.blocks.find((b) => b.type === 'title') ??
    doc.blocks.find((b) => b.type === 'heading' && (b.level ?? 1) === 1) ??
    doc.blocks.find((b) => b.type === 'heading');
  if (heading) return cutText(doc.text.slice(heading.start, heading.end).trim(), 300);
  return filename.replace(/\.[^.]+$/, '').normalize('NFC'); // a macOS file name comes decomposed (NFD)
}
