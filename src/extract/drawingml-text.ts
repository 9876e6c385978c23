/**
 * Text of DrawingML parts, the same in PowerPoint and Word packages: a text body's paragraphs, SmartArt data
 * (ppt/diagrams/data*.xml, word/diagrams/data*.xml) and charts (…/charts/chart*.xml, and the chartEx parts of
 * the newer chart types, …/charts/chartEx*.xml).
 *
 * Decisions: Office Math in a paragraph (a14:m) is its m:t texts in order ("E=mc2", no layout). SmartArt nodes
 * follow the diagram's own tree (its parOf connections, siblings by srcOrd), not the order of the points in the
 * part. A chart is one caption: title, series, categories, then axis titles and the custom texts of data labels.
 */
import { attr, child, children, descendants, textContent, type XmlElement } from './xml.js';

/**
 * Text of one a:p: runs, fields (dates, numbers), line breaks and Office Math (a14:m), in order; of content in a
 * form only newer programs read (mc:AlternateContent), the runs of its fallback ("E=mc2" as plain text).
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
    } else if (node.local === 'm') {
      text += mathText(node);
    } else if (node.local === 'AlternateContent') {
      const fallback = child(node, 'Fallback');
      if (fallback) text += paragraphText(fallback);
    }
  }
  return text;
}

/**
 * The m:t texts of Office Math, in order; equations of one m:oMathPara on lines of their own. PowerPoint writes an
 * equation shape only this way (its fallback is a picture), so this is the equation's only text.
 */
function mathText(math: XmlElement): string {
  const equations = descendants(math, 'oMath');
  const parts = equations.length > 0 ? equations : [math];
  return parts.map((equation) => descendants(equation, 't').map(textContent).join('')).join('\n');
}

/** The a:p paragraphs of a text body (none without one). */
export function paragraphs(txBody: XmlElement | undefined): XmlElement[] {
  return txBody ? children(txBody, 'p') : [];
}

/**
 * SmartArt: one text per content node (transitions and the document node carry no text of their own), in the
 * order PowerPoint draws them: depth first from the document node along the parOf connections (srcId the parent,
 * destId the child, siblings by srcOrd). Nodes are appended to the point list as they are added, so "Add Shape
 * Before" puts a node last in the part and first on the slide. Points no connection reaches follow in the order of
 * the part, so no text is ever lost to a damaged connection list.
 */
export function smartArtTexts(root: XmlElement): string[] {
  const points = descendants(root, 'pt');
  const byId = new Map<string, XmlElement>();
  for (const point of points) {
    const id = attr(point, 'modelId');
    if (id !== undefined && !byId.has(id)) byId.set(id, point);
  }
  const ordered = treeOrder(points, byId, childrenByParent(root));
  const reached = new Set(ordered);
  const texts: string[] = [];
  for (const point of [...ordered, ...points.filter((p) => !reached.has(p))]) {
    const type = attr(point, 'type') ?? 'node';
    if (type !== 'node' && type !== 'asst') continue;
    const text = paragraphs(child(point, 't')).map(paragraphText).join('\n').trim();
    if (text) texts.push(text);
  }
  return texts;
}

/** The parOf connections (the type when none is written) as child ids by parent id, each list by srcOrd. */
function childrenByParent(root: XmlElement): Map<string, string[]> {
  const links = new Map<string, Array<{ id: string; order: number }>>();
  for (const cxn of descendants(root, 'cxn')) {
    const parent = attr(cxn, 'srcId');
    const id = attr(cxn, 'destId');
    if ((attr(cxn, 'type') ?? 'parOf') !== 'parOf' || parent === undefined || id === undefined) continue;
    const order = Number.parseInt(attr(cxn, 'srcOrd') ?? '0', 10) || 0;
    const list = links.get(parent) ?? [];
    list.push({ id, order });
    links.set(parent, list);
  }
  // a stable sort: connections with the same srcOrd keep the order of the part
  return new Map(
    [...links].map(([parent, list]) => [parent, list.sort((a, b) => a.order - b.order).map((l) => l.id)]),
  );
}

/**
 * The points reached from the document node(s) along the connections, depth first and parents before their
 * children; iterative with a visited set, so a cycle or a very deep tree in a damaged part cannot hang or overflow.
 */
function treeOrder(
  points: XmlElement[],
  byId: ReadonlyMap<string, XmlElement>,
  childIds: ReadonlyMap<string, string[]>,
): XmlElement[] {
  const ordered: XmlElement[] = [];
  const visited = new Set<string>();
  const stack = points
    .filter((point) => attr(point, 'type') === 'doc')
    .map((point) => attr(point, 'modelId'))
    .filter((id): id is string => id !== undefined)
    .reverse();
  while (stack.length > 0) {
    const id = stack.pop()!;
    const point = byId.get(id);
    if (visited.has(id) || !point) continue;
    visited.add(id);
    ordered.push(point);
    const next = childIds.get(id) ?? [];
    for (let i = next.length - 1; i >= 0; i--) stack.push(next[i]!);
  }
  return ordered;
}

/**
 * Chart: title, series names and categories, then axis titles and the custom texts of data labels, as one caption.
 * Values are not text worth indexing. Reads the classic charts (c:chartSpace) and the newer types in chartEx parts
 * (cx:chartSpace: waterfall, treemap, sunburst, funnel, histogram…), whose data sits beside the chart in
 * cx:chartData rather than in its series.
 */
export function chartTexts(root: XmlElement): string[] {
  const chart = child(root, 'chart');
  if (!chart) return [];
  const lines: string[] = [];
  const title = titleText(child(chart, 'title'));
  if (title) lines.push(title);
  const series = seriesNames(chart);
  if (series.length > 0) lines.push(`Series: ${series.join(', ')}`);
  // a classic chart keeps its categories in its series, a chartEx part beside the chart: one of the two is empty
  const categories = [...categoryNames(chart), ...chartExCategories(root)];
  if (categories.length > 0) lines.push(`Categories: ${categories.join(', ')}`);
  const axes = axisTitles(chart);
  if (axes.length > 0) lines.push(`Axes: ${axes.join(', ')}`);
  const labels = labelTexts(chart);
  if (labels.length > 0) lines.push(`Labels: ${labels.join(', ')}`);
  return lines.length > 0 ? [lines.join('\n')] : [];
}

/** the axes of a classic chart, and chartEx's one kind (cx:axis) */
const AXES = new Set(['catAx', 'valAx', 'dateAx', 'serAx', 'axis']);

/** Titles of the axes that are shown: a deleted axis (c:delete, val "true" when left out) takes its title along. */
function axisTitles(chart: XmlElement): string[] {
  return children(child(chart, 'plotArea') ?? chart)
    .filter((element) => AXES.has(element.local) && !isDeleted(element))
    .map((axis) => titleText(child(axis, 'title')))
    .filter((text) => text !== '');
}

const isDeleted = (axis: XmlElement): boolean => {
  const deleted = child(axis, 'delete');
  const value = attr(deleted, 'val');
  return deleted !== undefined && value !== '0' && value !== 'false';
};

/** A title's rich text, or for a title linked to a cell (c:tx/c:strRef) the cell's cached value; '' for none. */
function titleText(title: XmlElement | undefined): string {
  if (!title) return '';
  const rich = descendants(title, 'p').map(paragraphText).join(' ').trim();
  return (
    rich ||
    descendants(child(title, 'tx') ?? title, 'v')
      .map(textContent)
      .join(' ')
      .trim()
  );
}

/** Names of the series (c:ser, cx:series) that have one (c:tx: a cell's cached value or a literal). */
function seriesNames(chart: XmlElement): string[] {
  const names: string[] = [];
  for (const ser of [...descendants(chart, 'ser'), ...descendants(chart, 'series')]) {
    const tx = child(ser, 'tx');
    const name = tx ? descendants(tx, 'v').map(textContent).join(' ').trim() : '';
    if (name) names.push(name);
  }
  return names;
}

/** The categories of the first classic series that has some (the series of one chart share them). */
function categoryNames(chart: XmlElement): string[] {
  for (const ser of descendants(chart, 'ser')) {
    const cat = child(ser, 'cat');
    const values = cat ? descendants(cat, 'v').map((v) => textContent(v).trim()) : [];
    if (values.some((value) => value !== '')) return values.filter((value) => value !== '');
  }
  return [];
}

/**
 * The categories of a chartEx part: the points of its text dimensions of type "cat" (cx:strDim), once each — a
 * treemap or sunburst repeats a parent category on every level below it.
 */
function chartExCategories(root: XmlElement): string[] {
  const data = child(root, 'chartData');
  if (!data) return [];
  const names = new Set<string>();
  for (const dimension of descendants(data, 'strDim')) {
    if (attr(dimension, 'type') !== 'cat') continue;
    for (const point of descendants(dimension, 'pt')) {
      const value = textContent(point).trim();
      if (value) names.add(value);
    }
  }
  return [...names];
}

/** Texts typed into data labels (c:dLbl/c:tx: rich text or a linked cell), once each; plain values are not text. */
function labelTexts(chart: XmlElement): string[] {
  const texts = new Set<string>();
  for (const label of descendants(chart, 'dLbl')) {
    const text = titleText(child(label, 'tx'));
    if (text) texts.add(text);
  }
  return [...texts];
}
