/**
 * Package-level helpers shared by the DOCX and PPTX extractors: relationships (.rels) and the core document
 * properties (docProps/core.xml). Metadata is a bonus: a broken core.xml never fails a document.
 */
import { FileError } from '../errors.js';
import { attr, children, parseXml, textContent } from './xml.js';
import type { ZipArchive } from './zip.js';

export interface Relationship {
  id: string;
  /** last segment of the relationship type URI, e.g. "slide", "notesSlide", "diagramData" */
  type: string;
  /** package path of the target (resolved against the source part), or the raw target when external */
  target: string;
  external: boolean;
}

/** "ppt/slides/slide1.xml" -> "ppt/slides/_rels/slide1.xml.rels"; "" (the package) -> "_rels/.rels" */
export function relsPathOf(part: string): string {
  const slash = part.lastIndexOf('/');
  return `${part.slice(0, slash + 1)}_rels/${part.slice(slash + 1)}.rels`;
}

/** Resolves a relationship target against the folder of its source part ("../media/x.png" etc.). */
export function resolveTarget(sourcePart: string, target: string): string {
  const base = target.startsWith('/') ? [] : sourcePart.split('/').slice(0, -1);
  for (const segment of target.replace(/^\/+/, '').split('/')) {
    if (segment === '..') base.pop();
    else if (segment !== '.' && segment !== '') base.push(segment);
  }
  return base.join('/');
}

/** Relationships of a part, by id. A missing .rels part is an empty map. */
export function readRelationships(
  zip: ZipArchive,
  sourcePart: string,
  file: string,
): Map<string, Relationship> {
  const relsPath = relsPathOf(sourcePart);
  const rels = new Map<string, Relationship>();
  if (!zip.has(relsPath)) return rels;
  const root = parseXml(zip.readText(relsPath), file, relsPath);
  for (const rel of children(root, 'Relationship')) {
    const id = attr(rel, 'Id');
    const target = attr(rel, 'Target');
    if (!id || target === undefined) continue;
    const external = attr(rel, 'TargetMode') === 'External';
    const type = (attr(rel, 'Type') ?? '').split('/').pop() ?? '';
    rels.set(id, {
      id,
      type,
      target: external ? target : resolveTarget(sourcePart, decodeTarget(target)),
      external,
    });
  }
  return rels;
}

/**
 * The package's main part, by the name it has in the ZIP: the target of its officeDocument relationship (ECMA-376
 * Part 2: the main part is found through it, whatever its name; Word Online and SharePoint save
 * word/document2.xml), the first one that is in the package. undefined when none is.
 */
export function officeDocumentPart(
  zip: ZipArchive,
  packageRelationships: ReadonlyMap<string, Relationship>,
): string | undefined {
  for (const rel of packageRelationships.values()) {
    if (rel.type !== 'officeDocument' || rel.external) continue;
    const entry = zip.entry(rel.target);
    if (entry) return entry.name;
  }
  return undefined;
}

/** Targets are URIs ("my%20file.xml"); ZIP names are not. A malformed escape keeps the raw target. */
const decodeTarget = (target: string): string => {
  try {
    return decodeURI(target);
  } catch {
    return target;
  }
};

const CORE_FIELDS: Record<string, string> = {
  title: 'title',
  subject: 'subject',
  creator: 'author',
  keywords: 'keywords',
  description: 'description',
  lastModifiedBy: 'lastModifiedBy',
  created: 'created',
  modified: 'modified',
  language: 'language',
};

/** title, author, created, modified, ... from the core properties part; non-empty values only. */
export function readCoreProperties(zip: ZipArchive, file: string): Record<string, string> {
  try {
    const packageRels = readRelationships(zip, '', file);
    const corePart =
      [...packageRels.values()].find((rel) => rel.type === 'core-properties' && !rel.external)?.target ??
      'docProps/core.xml';
    if (!zip.has(corePart)) return {};
    const root = parseXml(zip.readText(corePart), file, corePart);
    const props: Record<string, string> = {};
    for (const element of children(root)) {
      const key = Object.hasOwn(CORE_FIELDS, element.local) ? CORE_FIELDS[element.local] : undefined;
      const value = textContent(element).trim();
      if (key && value) props[key] = value;
    }
    return props;
  } catch (error) {
    // limits (bombs) still apply to metadata; anything else only costs us the metadata
    if (error instanceof FileError && error.code === 'ARCHIVE_BOMB') throw error;
    return {};
  }
}
