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
 * shape; a slide without a title placeholder has no heading. Paragraphs in body/content placeholders or with
 * explicit bullets are list items (level = a:pPr lvl), other text is a paragraph. Slide numbers are dropped.
 * Date and footer placeholders are page furniture: always in the page metadata, and as text only the first
 * time a given text occurs in the deck (so it is searchable once, not repeated on every slide). Comments are
 * not text. Embedded objects are counted, never opened. Hidden slides are extracted and marked hidden.
 */
import { ErrorCodes, FileError, isCorruptFile } from '../errors.js';
import { DocumentBuilder } from './document-builder.js';
import { chartTexts, paragraphs, paragraphText, smartArtTexts } from './drawingml-text.js';
import { type Relationship, readCoreProperties, readRelationships } from './office-metadata.js';
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
}

/** titles PowerPoint and generators leave in docProps/core.xml when nobody set one: no better than none */
const DEFAULT_TITLES =
  /^(powerpoint[- ]?(presentation|präsentation)|presentation|präsentation|(slide|folie) 1)$/i;

const TITLE_TYPES = new Set(['title', 'ctrTitle']);
/** placeholders whose paragraphs are bullets unless they say otherwise */
const BULLET_PLACEHOLDERS = new Set(['body', 'obj', '']);
const FURNITURE_TYPES = new Set(['dt', 'ftr', 'hdr']);

class SlideReader {
  /** furniture texts already emitted once as text somewhere in the deck */
  private readonly seenFurniture = new Set<string>();

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
    const state: SlideState = { items: [], images: 0, tables: 0, furniture: [] };
    const tree = path(root, 'cSld', 'spTree');
    if (tree) this.shapes(tree, state, rels);
    const notesRel = [...rels.values()].find((rel) => rel.type === 'notesSlide' && !rel.external);
    const notes = notesRel ? this.notes(notesRel.target) : '';
    return { state, notes, hidden: isFalse(attr(root, 'show')) };
  }

  /** Walks a shape tree (spTree or grpSp) in document order; returns whether anything was found. */
  private shapes(container: XmlElement, state: SlideState, rels: Map<string, Relationship>): boolean {
    const before = state.items.length + state.images + state.tables + (state.title ? 1 : 0);
    for (const shape of children(container)) {
      switch (shape.local) {
        case 'sp':
          this.shape(shape, state);
          break;
        case 'grpSp':
          this.shapes(shape, state, rels);
          break;
        case 'graphicFrame':
          this.graphicFrame(shape, state, rels);
          break;
        case 'pic':
          state.images++;
          break;
        case 'AlternateContent': {
          // the first Choice is the richer rendering; the Fallback only when the Choice gave nothing
          const choice = child(shape, 'Choice');
          const fallback = child(shape, 'Fallback');
          if (!(choice && this.shapes(choice, state, rels)) && fallback) this.shapes(fallback, state, rels);
          break;
        }
        default:
          break;
      }
    }
    return state.items.length + state.images + state.tables + (state.title ? 1 : 0) > before;
  }

  private shape(shape: XmlElement, state: SlideState): void {
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
    for (const paragraph of paragraphs(body)) {
      const text = paragraphText(paragraph);
      if (!text.trim()) continue;
      const pPr = child(paragraph, 'pPr');
      const level = Math.max(0, Math.min(Number.parseInt(attr(pPr, 'lvl') ?? '0', 10) || 0, 8));
      const bullet =
        child(pPr, 'buNone') !== undefined
          ? false
          : child(pPr, 'buChar') !== undefined ||
              child(pPr, 'buAutoNum') !== undefined ||
              child(pPr, 'buBlip') !== undefined
            ? true
            : bulletsByDefault;
      state.items.push(bullet ? { type: 'list_item', text, level } : { type: 'paragraph', text });
    }
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
    const packageRels = readRelationships(zip, '', file);
    const presentationPart =
      [...packageRels.values()].find(
        (rel) => rel.type === 'officeDocument' && !rel.external && zip.has(rel.target),
      )?.target ?? 'ppt/presentation.xml';
    parts = slideParts(zip, presentationPart, file);
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
