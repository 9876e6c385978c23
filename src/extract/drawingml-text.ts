/**
 * Text of DrawingML parts, the same in PowerPoint and Word packages: a text body's paragraphs, SmartArt data
 * (ppt/diagrams/data*.xml, word/diagrams/data*.xml) and charts (…/charts/chart*.xml).
 */
import { attr, child, children, descendants, textContent, type XmlElement } from './xml.js';

/**
 * Text of one a:p: runs, fields (dates, numbers) and line breaks, in order; of content in a form only newer
 * programs read (mc:AlternateContent: an equation, a14:m), the runs of its fallback ("E=mc2" as plain text).
 */
export function paragraphText(paragraph: XmlElement): string {
  let text = '';
  for (const node of paragraph.children) {
    if (typeof node === 'string') continue;
    if (node.local === 'r' || node.local === 'fld') {
      const t = child(node, 't');
      if (t) text += textContent(t);
    } else if (node.local === 'br') {
      text += '\n';
    } else if (node.local === 'AlternateContent') {
      const fallback = child(node, 'Fallback');
      if (fallback) text += paragraphText(fallback);
    }
  }
  return text;
}

/** The a:p paragraphs of a text body (none without one). */
export function paragraphs(txBody: XmlElement | undefined): XmlElement[] {
  return txBody ? children(txBody, 'p') : [];
}

/** SmartArt: one text per content node (transitions and the document node carry no text of their own). */
export function smartArtTexts(root: XmlElement): string[] {
  const texts: string[] = [];
  for (const point of descendants(root, 'pt')) {
    const type = attr(point, 'type') ?? 'node';
    if (type !== 'node' && type !== 'asst') continue;
    const text = paragraphs(child(point, 't')).map(paragraphText).join('\n').trim();
    if (text) texts.push(text);
  }
  return texts;
}

/** Chart: title, series names and categories, as one caption. Values are not text worth indexing. */
export function chartTexts(root: XmlElement): string[] {
  const chart = child(root, 'chart');
  if (!chart) return [];
  const lines: string[] = [];
  const title = child(chart, 'title');
  if (title) {
    // rich text, or a title linked to a cell (c:tx/c:strRef): the cell's cached value
    const rich = descendants(title, 'p').map(paragraphText).join(' ').trim();
    const linked = rich
      ? ''
      : descendants(child(title, 'tx') ?? title, 'v')
          .map(textContent)
          .join(' ')
          .trim();
    if (rich || linked) lines.push(rich || linked);
  }
  const series: string[] = [];
  const categories: string[] = [];
  for (const ser of descendants(chart, 'ser')) {
    const name = descendants(child(ser, 'tx') ?? ser, 'v')
      .map(textContent)
      .join(' ')
      .trim();
    if (child(ser, 'tx') && name) series.push(name);
    const cat = child(ser, 'cat');
    if (cat && categories.length === 0) {
      for (const v of descendants(cat, 'v')) {
        const value = textContent(v).trim();
        if (value) categories.push(value);
      }
    }
  }
  if (series.length > 0) lines.push(`Series: ${series.join(', ')}`);
  if (categories.length > 0) lines.push(`Categories: ${categories.join(', ')}`);
  return lines.length > 0 ? [lines.join('\n')] : [];
}
