import { normalizeTitle } from '../extract/normalize.js';
import type { ExtractedDocument } from '../extract/types.js';
import { cutText } from '../text/cut.js';

/**
 * A title from metadata as stored: a string normalised as the text is (an extraction stored before titles were,
 * or metadata from elsewhere, may still hold a soft hyphen), a finite number as its digits (front matter's
 * `title: 1984`); anything else is none.
 */
function metadataTitle(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const title = normalizeTitle(value);
  return title === '' ? undefined : title;
}

/**
 * A document's title: its metadata, then the first title/H1 (slide 1's title for decks), then the file name. Each
 * is normalised as text is, on one line: a file name may hold control characters (`rot\x1b[31m.txt`,
 * `zeile\nzwei.txt`) that went into the title raw, and from there into `[Quelle N: title]` and the terminal.
 */
export function chooseTitle(
  doc: Pick<ExtractedDocument, 'text' | 'blocks' | 'metadata'>,
  filename: string,
): string {
  const fromMeta =
    metadataTitle(doc.metadata.title) ??
    metadataTitle((doc.metadata.frontMatter as Record<string, unknown> | undefined)?.title);
  if (fromMeta) return cutText(fromMeta, 300);
  const heading =
    doc.blocks.find((b) => b.type === 'title') ??
    doc.blocks.find((b) => b.type === 'heading' && (b.level ?? 1) === 1) ??
    doc.blocks.find((b) => b.type === 'heading');
  if (heading) return cutText(doc.text.slice(heading.start, heading.end).trim(), 300);
  // NFC too: a macOS file name comes decomposed (NFD); a name of control characters only keeps its extension
  return normalizeTitle(filename.replace(/\.[^.]+$/, '')) || normalizeTitle(filename);
}
