/**
 * PPTX extraction by reading the slide XML ourselves (fflate via our bounded ZIP reader + fast-xml-parser
 * via our safe XML helpers).
 *
 * Why not node-pptx-parser (or another PPTX text library): it returns a flat list of text runs per slide,
 * with no slide title, no tables, no speaker notes and no SmartArt, and it opens the ZIP and parses XML with
 * no size or entity limits. What we need per slide is exactly what PresentationML spells out plainly: the
 * title placeholder (p:ph type="title"/"ctrTitle"), text frames paragraph by paragraph with their indent
 * level, tables (a:tbl), group shapes (p:grpSp, nested), SmartArt text (ppt/diagrams/data*.xml, reached
 * through the slide's relationships), chart titles and series names (ppt/charts/chart*.xml), and the notes
 * slide. Reading that directly is a few hundred lines with no extra dependency, keeps slide order from
 * ppt/presentation.xml (not from file names, which need not match), and puts every byte we inflate and every
 * XML part we parse under the same bomb and XXE protection as DOCX.
 *
 * Decisions: the title becomes a level-1 heading and comes first on its page even when it is not the first
 * shape; a slide without a title placeholder has no heading. A paragraph is a list item (level = a:pPr lvl) when
 * its bullet says so, looked up as PowerPoint does: the paragraph's own a:pPr, the shape's a:lstStyle, the list
 * style of the matching placeholder on the slide's layout, and last the placeholder's kind (body/content
 * placeholders have bullets, other text has none); other text is a paragraph. An auto-numbered item (a:buAutoNum,
 * looked up the same way) starts with its number as PowerPoint shows it ("1. ", "a) "): counted per level within its
 * text body, a sub-list starting again each time, the outer list counting on past it. Slide numbers are dropped.
 * Date and footer placeholders are page furniture: always in the page metadata, and as text only the first
 * time a given text occurs in the deck (so it is searchable once, not repeated on every slide). Comments are
 * not text. Embedded objects are counted, never opened. Hidden slides are extracted and marked hidden; hidden
 * shapes (p:cNvPr hidden, set in the Selection Pane) are left out, as PowerPoint never draws them, and counted
 * in the page metadata (hiddenShapes), as Word's hidden text is. Of content in two forms (mc:AlternateContent)
 * the newer one is read, the fallback only when it gives nothing — never for a chartEx chart, whose fallback is
 * a notice that the chart cannot be shown.
 *
 * Damage costs what it touches: a broken slide is skipped with a warning (but a deck whose every slide is broken
 * is a CORRUPT_FILE, not an empty success); a broken slide list is read by the parts' names; broken package
 * relationships cost nothing but a warning, as the presentation part is where every writer puts it.
 */
import { ErrorCodes, FileError, isCorruptFile } from '../errors.js';
import { DocumentBuilder } from './document-builder.js';
import { chartTexts, paragraphs, paragraphText, smartArtTexts } from './drawingml-text.js';
import { autoNumberLabel, MAX_START_AT } from './list-numbers.js';
import {
  officeDocumentPart,
  type Relationship,
  readCoreProperties,
  readRelationships,
  relsPathOf,
} from './office-metadata.js';
import { checkFileSize, sniffFormat } from './sniff.js';
import type { BlockType, ExtractedDocument, ExtractOptions } from './types.js';
import { attr, child, children, descendants, parseXml, path, prefixedAttr, type XmlElement } from './xml.js';
import { openZip, type ZipArchive } from './zip.js';

interface SlideItem {
  type: BlockType;
  text: string;
  level?: number;
}

interface SlideState {
  items: SlideItem[];
  title?: string;
  images: number;
  tables: number;
  furniture: string[];
  /** shapes left out because they are hidden (groups count once, whatever they hold) */
  hiddenShapes: number;
}

/** What the shapes of one slide are read with: what was found so far, its relationships, its layout part. */
interface SlideContext {
  state: SlideState;
  rels: Map<string, Relationship>;
  layout: string | undefined;
}

/** A placeholder of a slide layout, as a slide's placeholder is matched to it: by idx, else by type. */
interface LayoutPlaceholder {
  idx: string | undefined;
  type: string;
  listStyle: XmlElement | undefined;
}

/** titles PowerPoint and generators leave in docProps/core.xml when nobody set one: no better than none */
const DEFAULT_TITLES =
  /^(powerpoint[- ]?(presentation|präsentation)|presentation|präsentation|(slide|folie) 1)$/i;

const TITLE_TYPES = new Set(['title', 'ctrTitle']);
/** placeholders whose paragraphs are bullets unless they say otherwise */
const BULLET_PLACEHOLDERS = new Set(['body', 'obj', '']);
const FURNITURE_TYPES = new Set(['dt', 'ftr', 'hdr']);
/** the part a presentation's package relationships normally name, and where every writer puts it */
const PRESENTATION_PART = 'ppt/presentation.xml';

class SlideReader {
  /** furniture texts already emitted once as text somewhere in the deck */
  private readonly seenFurniture = new Set<string>();
  /** placeholders of each slide layout read so far: a deck's slides share a handful of layouts */
  private readonly layouts = new Map<string, LayoutPlaceholder[]>();

  constructor(
    private readonly zip: ZipArchive,
    private readonly file: string,
    readonly warnings: string[],
  ) {}

  read(slidePart: string): { state: SlideState; notes: string; hidden: boolean } {
    const root = parseXml(this.zip.readText(slidePart), this.file, slidePart);
    let rels: ReturnType<typeof readRelationships>;
    try {
      rels = readRelationships(this.zip, slidePart, this.file);
    } catch (error) {
      // what the slide links to (notes, charts, SmartArt, pictures) is lost with its relationships; its text is not
      if (!isCorruptFile(error)) throw error;
      this.warnings.push(
        `${slidePart}: its relationships are damaged (${error.reason}): notes, charts and SmartArt not read`,
      );
      rels = new Map();
    }
    const state: SlideState = { items: [], images: 0, tables: 0, furniture: [], hiddenShapes: 0 };
    const layout = [...rels.values()].find((rel) => rel.type === 'slideLayout' && !rel.external)?.target;
    const tree = path(root, 'cSld', 'spTree');
    if (tree) this.shapes(tree, { state, rels, layout });
    const notesRel = [...rels.values()].find((rel) => rel.type === 'notesSlide' && !rel.external);
    const notes = notesRel ? this.notes(notesRel.target) : '';
    return { state, notes, hidden: isFalse(attr(root, 'show')) };
  }

  /** Walks a shape tree (spTree or grpSp) in document order; returns whether anything was found. */
  private shapes(container: XmlElement, slide: SlideContext): boolean {
    const { state } = slide;
    const found = () =>
      state.items.length + state.images + state.tables + state.hiddenShapes + (state.title ? 1 : 0);
    const before = found();
    for (const shape of children(container)) {
      if (SHAPES.has(shape.local) && isHidden(shape)) {
        state.hiddenShapes++;
        continue;
      }
      switch (shape.local) {
        case 'sp':
          this.shape(shape, slide);
          break;
        case 'grpSp':
          this.shapes(shape, slide);
          break;
        case 'graphicFrame':
          this.graphicFrame(shape, state, slide.rels);
          break;
        case 'pic':
          state.images++;
          break;
        case 'AlternateContent':
          this.alternateContent(shape, slide);
          break;
        default:
          break;
      }
    }
    return found() > before;
  }

  /**
   * The first Choice is the richer rendering; the Fallback only when the Choice gave nothing (a hidden shape counts
   * as something: its fallback is the same shape). A chartEx chart's Fallback is a notice that the chart cannot be
   * shown, never its content: better no text than that.
   */
  private alternateContent(content: XmlElement, slide: SlideContext): void {
    const choice = child(content, 'Choice');
    const fallback = child(content, 'Fallback');
    if (choice && this.shapes(choice, slide)) return;
    if (fallback && !(choice && requiresChartEx(choice))) this.shapes(fallback, slide);
  }

  private shape(shape: XmlElement, slide: SlideContext): void {
    const { state } = slide;
    const ph = path(shape, 'nvSpPr', 'nvPr', 'ph');
    const phType = ph ? (attr(ph, 'type') ?? '') : undefined;
    const body = child(shape, 'txBody');
    if (phType === 'sldNum') return;
    if (phType !== undefined && TITLE_TYPES.has(phType)) {
      const title = paragraphs(body).map(paragraphText).join(' ').replace(/\s+/g, ' ').trim();
      if (title && state.title === undefined) state.title = title;
      else if (title) state.items.push({ type: 'paragraph', text: title });
      return;
    }
    if (phType !== undefined && FURNITURE_TYPES.has(phType)) {
      const text = paragraphs(body).map(paragraphText).join('\n').trim();
      if (!text) return;
      state.furniture.push(text);
      if (!this.seenFurniture.has(text)) {
        this.seenFurniture.add(text);
        state.items.push({ type: 'paragraph', text });
      }
      return;
    }
    const bulletsByDefault = phType !== undefined && BULLET_PLACEHOLDERS.has(phType);
    // the layout is read only when neither the paragraph nor its shape decides, and only for a placeholder
    const layoutStyle = () => (ph ? this.layoutListStyle(slide.layout, ph) : undefined);
    /** the auto-numbered list running at each level of this text body, with the count it has reached */
    const counters: Array<(AutoNumber & { count: number }) | undefined> = [];
    for (const paragraph of paragraphs(body)) {
      const text = paragraphText(paragraph);
      // PowerPoint draws no number on an empty paragraph and counts on after it: it neither counts nor ends a list
      if (!text.trim()) continue;
      const pPr = child(paragraph, 'pPr');
      const level = Math.max(0, Math.min(Number.parseInt(attr(pPr, 'lvl') ?? '0', 10) || 0, 8));
      const levelStyle = `lvl${level + 1}pPr`;
      const bullet =
        bulletOf(pPr) ??
        bulletOf(child(child(body, 'lstStyle'), levelStyle)) ??
        bulletOf(child(layoutStyle(), levelStyle)) ??
        bulletsByDefault;
      // any paragraph ends the lists deeper than itself (a sub-list starts again each time), a paragraph without a
      // number the one at its own level; a sub-list in between leaves the outer list counting on
      counters.length = level + 1;
      if (typeof bullet !== 'object') {
        counters[level] = undefined;
        state.items.push(bullet ? { type: 'list_item', text, level } : { type: 'paragraph', text });
        continue;
      }
      // the same scheme and start counts on (writers repeat startAt on every item); another starts a new list
      const running = counters[level];
      const counter =
        running && running.type === bullet.type && running.startAt === bullet.startAt
          ? { ...running, count: running.count + 1 }
          : { ...bullet, count: bullet.startAt };
      counters[level] = counter;
      // the label leads the item's text, one space before it, as a Word list item's does ("1) Schritt eins")
      const label = autoNumberLabel(counter.type, counter.count);
      state.items.push({ type: 'list_item', text: `${label} ${text.trimStart()}`, level });
    }
  }

  /** The list style (a:lstStyle) of the layout's placeholder that a slide's placeholder `ph` inherits from. */
  private layoutListStyle(layout: string | undefined, ph: XmlElement): XmlElement | undefined {
    if (layout === undefined) return undefined;
    let placeholders = this.layouts.get(layout);
    if (!placeholders) {
      placeholders = this.layoutPlaceholders(layout);
      this.layouts.set(layout, placeholders);
    }
    const idx = attr(ph, 'idx');
    const type = attr(ph, 'type') ?? 'obj';
    const match =
      (idx !== undefined ? placeholders.find((candidate) => candidate.idx === idx) : undefined) ??
      placeholders.find((candidate) => candidate.type === type);
    return match?.listStyle;
  }

  /**
   * The placeholders of a slide layout. A missing or damaged layout has none: it costs no warning, as the slide
   * reads as it would without list styles (bullets by the placeholder's kind); limits (a bomb) still throw.
   */
  private layoutPlaceholders(layout: string): LayoutPlaceholder[] {
    if (!this.zip.has(layout)) return [];
    let root: XmlElement;
    try {
      root = parseXml(this.zip.readText(layout), this.file, layout);
    } catch (error) {
      if (isCorruptFile(error)) return [];
      throw error;
    }
    const tree = path(root, 'cSld', 'spTree');
    return (tree ? descendants(tree, 'sp') : []).flatMap((sp) => {
      const ph = path(sp, 'nvSpPr', 'nvPr', 'ph');
      if (!ph) return [];
      return [
        { idx: attr(ph, 'idx'), type: attr(ph, 'type') ?? 'obj', listStyle: path(sp, 'txBody', 'lstStyle') },
      ];
    });
  }

  private graphicFrame(frame: XmlElement, state: SlideState, rels: Map<string, Relationship>): void {
    const data = path(frame, 'graphic', 'graphicData');
    if (!data) return;
    const table = child(data, 'tbl');
    if (table) {
      state.tables++;
      const text = tableText(table);
      if (text) state.items.push({ type: 'table', text });
      return;
    }
    const diagram = child(data, 'relIds');
    if (diagram) {
      const rel = rels.get(prefixedAttr(diagram, 'dm') ?? '');
      if (rel && !rel.external)
        for (const text of this.partTexts(rel.target, smartArtTexts))
          state.items.push({ type: 'paragraph', text });
      return;
    }
    const chart = child(data, 'chart');
    if (chart) {
      const rel = rels.get(prefixedAttr(chart, 'id') ?? '');
      if (rel && !rel.external)
        for (const text of this.partTexts(rel.target, chartTexts))
          state.items.push({ type: 'caption', text });
      return;
    }
    // OLE objects and other frames: their pictures are images, their content is not opened
    if (descendants(data, 'pic').length > 0) state.images++;
  }

  /** Reads a related part; a missing or malformed part costs a warning, not the deck. */
  private partTexts(part: string, read: (root: XmlElement) => string[]): string[] {
    if (!this.zip.has(part)) {
      this.warnings.push(`${part} referenced but missing`);
      return [];
    }
    try {
      return read(parseXml(this.zip.readText(part), this.file, part));
    } catch (error) {
      if (isCorruptFile(error)) {
        this.warnings.push(`${part} skipped: ${error.message}`);
        return [];
      }
      throw error;
    }
  }

  private notes(part: string): string {
    return this.partTexts(part, (root) => {
      const tree = path(root, 'cSld', 'spTree');
      if (!tree) return [];
      const texts: string[] = [];
      // the notes text sits in the body placeholder; slide image, number, header/footer are furniture
      for (const shape of descendants(tree, 'sp')) {
        const ph = path(shape, 'nvSpPr', 'nvPr', 'ph');
        if (!ph || attr(ph, 'type') !== 'body') continue;
        const text = paragraphs(child(shape, 'txBody')).map(paragraphText).join('\n').trim();
        if (text) texts.push(text);
      }
      return texts;
    }).join('\n');
  }
}

function tableText(table: XmlElement): string {
  const rows: string[] = [];
  for (const row of children(table, 'tr')) {
    const cells = children(row, 'tc').map((cell) =>
      // merged continuation cells repeat nothing; they stay empty to keep the columns aligned
      isTrue(attr(cell, 'hMerge')) || isTrue(attr(cell, 'vMerge'))
        ? ''
        : paragraphs(child(cell, 'txBody')).map(paragraphText).join(' ').replace(/\s+/g, ' ').trim(),
    );
    while (cells.length > 0 && cells[cells.length - 1] === '') cells.pop();
    if (cells.some((c) => c !== '')) rows.push(cells.join(' | '));
  }
  return rows.join('\n');
}

/** the shape elements of a shape tree that p:cNvPr hidden="1" can hide */
const SHAPES = new Set(['sp', 'grpSp', 'graphicFrame', 'pic', 'cxnSp']);

/** A shape hidden in the Selection Pane: hidden on the p:cNvPr of its nvSpPr, nvGrpSpPr, nvGraphicFramePr, nvPicPr… */
function isHidden(shape: XmlElement): boolean {
  const properties = children(shape).find((element) => /^nv\w*Pr$/.test(element.local));
  return isTrue(attr(child(properties, 'cNvPr'), 'hidden'));
}

/** An auto-numbered paragraph's a:buAutoNum: its scheme (ST_TextAutonumberScheme) and the number it starts at. */
interface AutoNumber {
  type: string;
  startAt: number;
}

/**
 * A paragraph properties element's (a:pPr, a:lvl1pPr…) word on bullets: none (false), a bullet character or picture
 * (true), a number (its a:buAutoNum), or undefined for no word.
 */
function bulletOf(properties: XmlElement | undefined): boolean | AutoNumber | undefined {
  if (child(properties, 'buNone')) return false;
  const autoNumber = child(properties, 'buAutoNum');
  if (autoNumber) {
    // outside ST_TextBulletStartAtNum (1 to 32767) the start is damaged: a huge one would only make a huge label
    const startAt = Number.parseInt(attr(autoNumber, 'startAt') ?? '1', 10);
    return {
      type: attr(autoNumber, 'type') ?? 'arabicPeriod',
      startAt: startAt >= 1 && startAt <= MAX_START_AT ? startAt : 1,
    };
  }
  if (child(properties, 'buChar') || child(properties, 'buBlip')) return true;
  return undefined;
}

/**
 * Whether an mc:Choice requires a chartEx namespace: by its usual prefixes (cx, cx1…cx8), or by the namespace a
 * required prefix is declared with on the Choice (…/office/drawing/2014/chartex, …/2015/9/8/chartex…).
 */
function requiresChartEx(choice: XmlElement): boolean {
  return (attr(choice, 'Requires') ?? '')
    .split(/\s+/)
    .some((prefix) => /^cx\d*$/.test(prefix) || /\/chartex$/i.test(choice.attrs[`xmlns:${prefix}`] ?? ''));
}

/** xsd:boolean: "true" or "1", "false" or "0" (PowerPoint writes the digits, other writers the words). */
const isTrue = (value: string | undefined) => value === '1' || value === 'true';
const isFalse = (value: string | undefined) => value === '0' || value === 'false';

/**
 * Slide parts in presentation order (p:sldIdLst), resolved through the presentation's relationships; a slide id
 * without a slide part keeps its place (as a skipped slide), so that the slides after it keep their numbers.
 */
function slideParts(zip: ZipArchive, presentationPart: string, file: string): Array<string | { id: string }> {
  const presentation = parseXml(zip.readText(presentationPart), file, presentationPart);
  const rels = readRelationships(zip, presentationPart, file);
  const list = child(presentation, 'sldIdLst');
  if (!list) return [];
  return children(list, 'sldId').map((slideId) => {
    const rel = rels.get(prefixedAttr(slideId, 'id') ?? '');
    return rel && !rel.external ? rel.target : { id: attr(slideId, 'id') ?? '?' };
  });
}

/**
 * The presentation part the package relationships (_rels/.rels) name. Damaged ones cost a warning and the usual
 * part, not the slide order: that is the presentation's, and it is still there to be read.
 */
function presentationPartOf(zip: ZipArchive, file: string, warnings: string[]): string {
  let packageRels: Map<string, Relationship>;
  try {
    packageRels = readRelationships(zip, '', file);
  } catch (error) {
    if (!isCorruptFile(error)) throw error;
    warnings.push(
      `${relsPathOf('')}: the package relationships are damaged (${error.reason}): ${PRESENTATION_PART} read`,
    );
    return PRESENTATION_PART;
  }
  return officeDocumentPart(zip, packageRels) ?? PRESENTATION_PART;
}

/** The slide parts (ppt/slides/slideN.xml) in the order of their numbers. */
function slidePartsByName(zip: ZipArchive): string[] {
  const numbered = zip
    .names()
    .map((name) => ({ name, number: /^ppt\/slides\/slide(\d+)\.xml$/i.exec(name)?.[1] }))
    .filter((part): part is { name: string; number: string } => part.number !== undefined);
  return numbered.sort((a, b) => Number(a.number) - Number(b.number)).map((part) => part.name);
}

export async function extractPptx(
  bytes: Uint8Array,
  file: string,
  options: ExtractOptions,
): Promise<ExtractedDocument> {
  checkFileSize(file, bytes.length, options.maxFileBytes);
  sniffFormat(bytes, 'pptx', file);
  const zip = openZip(bytes, file, options);
  const builder = new DocumentBuilder('pptx');

  let parts: Array<string | { id: string }>;
  try {
    parts = slideParts(zip, presentationPartOf(zip, file, builder.warnings), file);
  } catch (error) {
    // the slide list is damaged, the slides need not be: read them as a repair would, by their parts' names
    if (!isCorruptFile(error)) throw error;
    parts = slidePartsByName(zip);
    if (parts.length === 0) throw error;
    builder.warnings.push(`${error.reason}: slides read in the order of their parts' names`);
  }
  // a slide list whose relationships are gone (none of its ids names a part), beside slide parts that are there
  if (parts.length > 0 && parts.every((part) => typeof part !== 'string')) {
    const byName = slidePartsByName(zip);
    if (byName.length > 0) {
      parts = byName;
      builder.warnings.push(
        "the presentation's relationships name no slide part: slides read in the order of their parts' names",
      );
    }
  }
  if (parts.length > options.maxPages) {
    throw new FileError(
      ErrorCodes.TOO_MANY_PAGES,
      file,
      `${parts.length} slides (limit ${options.maxPages})`,
    );
  }

  const reader = new SlideReader(zip, file, builder.warnings);
  let firstTitle: string | undefined;
  let notesCount = 0;
  let firstSkip: FileError | undefined;
  let skipped = 0;
  for (const [index, part] of parts.entries()) {
    const number = index + 1;
    let slide: ReturnType<SlideReader['read']>;
    try {
      if (typeof part !== 'string')
        throw new FileError(ErrorCodes.CORRUPT_FILE, file, `slide id ${part.id} has no slide part`);
      if (!zip.has(part)) throw new FileError(ErrorCodes.CORRUPT_FILE, file, `slide part ${part} missing`);
      slide = reader.read(part);
    } catch (error) {
      // one broken slide does not cost the deck; limits (bombs) still do
      if (isCorruptFile(error)) {
        firstSkip ??= error;
        skipped++;
        builder.warnings.push(`slide ${number} skipped: ${error.message}`);
        builder.startPage(number, { slideTitle: null, hasNotes: false, images: 0, tables: 0, skipped: true });
        continue;
      }
      throw error;
    }
    const { state, notes, hidden } = slide;
    const metadata: Record<string, unknown> = {
      slideTitle: state.title ?? null,
      hasNotes: notes !== '',
      images: state.images,
      tables: state.tables,
    };
    if (hidden) metadata.hidden = true;
    if (state.hiddenShapes > 0) metadata.hiddenShapes = state.hiddenShapes;
    if (state.furniture.length > 0) metadata.footer = state.furniture;
    builder.startPage(number, metadata);
    if (state.title) {
      builder.add('heading', state.title, 1);
      firstTitle ??= state.title;
    }
    for (const item of state.items) builder.add(item.type, item.text, item.level);
    if (notes) {
      builder.add('notes', notes);
      notesCount++;
    }
  }

  // a deck of slides none of which could be read is a broken file, not an empty one
  if (firstSkip && skipped === parts.length) throw firstSkip;

  const embedded = zip.names().filter((n) => /^ppt\/embeddings\/[^/]+$/i.test(n));
  if (embedded.length > 0) builder.warnings.push(`${embedded.length} embedded object(s) not extracted`);
  const core = readCoreProperties(zip, file);
  const metadata: Record<string, unknown> = {
    ...core,
    slideCount: parts.length,
    notesCount,
    embeddedObjects: embedded.length,
  };
  if ((!core.title || DEFAULT_TITLES.test(core.title)) && firstTitle) metadata.title = firstTitle;
  return builder.build(metadata);
}
