import { foldName } from '../db/collation.js';
import { insertOrExistingId } from '../db/insert-or-existing.js';
import type { SqlExecutor } from '../db/sql.js';
import { fillPrompt } from '../llm/prompts.js';
import { cutText } from '../text/cut.js';
import { countTokens } from '../text/tokenizer.js';
import { documentTitle, loadChunks, loadSections } from './chunks.js';
import { type Asker, ask, type KnowledgeContext } from './llm-step.js';
import { hasWordCharacter } from './normalize.js';
import {
  deleteOrphanTerms,
  inLockOrder,
  lockingRead,
  lockTermPath,
  placedTerms,
  TERM_PATH_SEPARATOR,
  termLockKey,
} from './retract.js';

export interface TaxonomyConfig {
  max_categories: number;
  max_depth: number;
  /** how much of the document's text goes into the prompt */
  max_input_tokens: number;
  /** how many existing category paths are offered for reuse */
  existing_terms_limit: number;
}

export const taxonomyConfigProperties = {
  max_categories: { type: 'integer', minimum: 1, maximum: 20, default: 3 },
  max_depth: { type: 'integer', minimum: 1, maximum: 8, default: 4 },
  max_input_tokens: { type: 'integer', minimum: 200, maximum: 100000, default: 3000 },
  existing_terms_limit: { type: 'integer', minimum: 0, maximum: 5000, default: 200 },
} as const;

export const TAXONOMY_PROMPT_KEYS = [
  'title',
  'existing',
  'outline',
  'text',
  'max_categories',
  'max_depth',
] as const;

export const PATH_SEPARATOR = TERM_PATH_SEPARATOR;

export function taxonomySchema(maxCategories: number, maxDepth: number) {
  return {
    type: 'object',
    properties: {
      categories: {
        type: 'array',
        minItems: 1,
        maxItems: maxCategories,
        items: {
          type: 'object',
          properties: {
            path: {
              type: 'array',
              minItems: 1,
              maxItems: maxDepth,
              items: { type: 'string', minLength: 1, maxLength: 120 },
            },
            confidence: { type: 'number', minimum: 0, maximum: 1 },
          },
          required: ['path', 'confidence'],
          additionalProperties: false,
        },
      },
    },
    required: ['categories'],
    additionalProperties: false,
  };
}

interface TaxonomyAnswer {
  categories: Array<{ path: string[]; confidence: number }>;
}

/** A term name as stored: NFC, whitespace collapsed, no path separator inside. */
export const cleanTermName = (name: string): string =>
  cutText(name.normalize('NFC').replace(/>/g, ' ').replace(/\s+/g, ' ').trim(), 120);

/** taxonomy_terms.path holds this many characters (VARCHAR(700) on MariaDB) */
const MAX_PATH_CHARS = 700;

/**
 * The names of a path, each cut to its share of MAX_PATH_CHARS when the whole would be longer: eight
 * levels of 120 characters did not fit, and MariaDB refused the row ("Data too long"), on every retry alike.
 */
export function fittingPath(names: readonly string[]): string[] {
  if (names.join(PATH_SEPARATOR).length <= MAX_PATH_CHARS) return [...names];
  const share = Math.floor((MAX_PATH_CHARS - PATH_SEPARATOR.length * (names.length - 1)) / names.length);
  return names.map((name) => cutText(name, share).trimEnd()).filter(Boolean);
}

interface TermRow {
  id: number;
  path: string;
}

/**
 * The term `name` below `parent` (a root term without one), found by its name folded (foldName): "schulung" and
 * "SCHULUNG" are the term "Schulung" on SQLite as on MariaDB, whose collation compares the paths so. Locked while the
 * document's placements are written (see lockingRead).
 */
async function findTerm(
  db: SqlExecutor,
  parent: TermRow | undefined,
  name: string,
  path: string,
): Promise<TermRow | undefined> {
  // the exact path first: its unique key finds it at once
  const exact = await db.query<TermRow>(
    `SELECT id, path FROM taxonomy_terms WHERE path = ?${lockingRead(db)}`,
    [path],
  );
  if (exact[0]) return { id: Number(exact[0].id), path: exact[0].path };
  const key = foldName(name);
  const siblings = await db.query<TermRow & { name: string }>(
    parent
      ? 'SELECT id, name, path FROM taxonomy_terms WHERE parent_id = ? ORDER BY id'
      : 'SELECT id, name, path FROM taxonomy_terms WHERE parent_id IS NULL ORDER BY id',
    parent ? [parent.id] : [],
  );
  const match = siblings.find((s) => foldName(s.name) === key);
  if (!match) return undefined;
  // the one reused is locked (another document's orphan cleanup may have taken it meanwhile: then it is made anew)
  const locked = await db.query<TermRow>(
    `SELECT id, path FROM taxonomy_terms WHERE id = ?${lockingRead(db)}`,
    [match.id],
  );
  return locked[0] ? { id: Number(locked[0].id), path: locked[0].path } : undefined;
}

/**
 * The term of a path, created with its ancestors when missing. Returns the leaf's id. A term is looked up by its
 * name folded (findTerm), and a path is made of the names its terms have: the first spelling stays.
 */
export async function ensureTermPath(db: SqlExecutor, names: readonly string[]): Promise<number> {
  let parent: TermRow | undefined;
  for (const name of names) {
    const path = parent ? `${parent.path}${PATH_SEPARATOR}${name}` : name;
    const found = await findTerm(db, parent, name, path);
    if (found) {
      parent = found;
      continue;
    }
    const id = await insertOrExistingId(
      db,
      'INSERT INTO taxonomy_terms (name, parent_id, path) VALUES (?, ?, ?)',
      [name, parent?.id ?? null, path],
    );
    // on MariaDB the row may be another document's, made meanwhile in another spelling: its path goes on
    const made =
      db.dialect === 'mysql'
        ? await db.query<{ path: string }>('SELECT path FROM taxonomy_terms WHERE id = ?', [id])
        : [];
    parent = { id, path: made[0]?.path ?? path };
  }
  return parent!.id;
}

/** The document's heading outline, indented by level (at most `maxLines` lines). */
async function outlineOf(ctx: KnowledgeContext, maxLines = 80): Promise<string> {
  const sections = await loadSections(ctx.db, ctx.document.id);
  const lines = sections.map((s) => `${'  '.repeat(Math.max(0, s.level - 1))}- ${s.heading}`);
  if (lines.length === 0) return '(keine Überschriften)';
  return lines.length > maxLines
    ? [...lines.slice(0, maxLines), `  … (${lines.length - maxLines} weitere)`].join('\n')
    : lines.join('\n');
}

/** The beginning of the document, whole chunks up to the token budget. */
export async function leadingText(ctx: KnowledgeContext, budget: number): Promise<string> {
  const chunks = await loadChunks(ctx.db, ctx.document.id);
  const parts: string[] = [];
  let used = 0;
  for (const c of chunks) {
    const tokens = c.tokenCount || countTokens(c.content);
    if (used + tokens > budget && parts.length > 0) break;
    parts.push(c.content);
    used += tokens;
  }
  return parts.join('\n\n');
}

/**
 * Files the document into the shared hierarchical taxonomy (one call per document; existing paths are offered
 * so the tree grows instead of forking). Replaces the document's placement atomically; terms no document
 * uses any more are removed.
 */
export async function runTaxonomyBuild(ctx: KnowledgeContext, asker: Asker, config: TaxonomyConfig) {
  const text = await leadingText(ctx, config.max_input_tokens);
  if (text.trim() === '') return { categories: 0, terms: 0, empty: true };
  // the categories other documents are filed under (not this document's own: a rerun must send the same
  // prompt as the first run, or it would miss the response cache); current documents only: a version that failed
  // or was replaced keeps its placements until it is retracted, and its categories are none of the tree's
  const existing = await ctx.db.query<{ path: string }>(
    `SELECT DISTINCT t.path FROM taxonomy_terms t
       JOIN document_taxonomy d ON d.term_id = t.id
       JOIN documents doc ON doc.id = d.document_id
      WHERE d.document_id <> ? AND doc.is_latest = 1 AND doc.status <> 'deleted'
      ORDER BY t.path LIMIT ${Math.floor(config.existing_terms_limit)}`,
    [ctx.document.id],
  );
  const answer = await ask<TaxonomyAnswer>(asker, {
    prompt: fillPrompt(asker.template, {
      title: await documentTitle(ctx.db, ctx.document.id),
      existing: existing.length > 0 ? existing.map((r) => `- ${r.path}`).join('\n') : '(noch keine)',
      outline: await outlineOf(ctx),
      text,
      max_categories: config.max_categories,
      max_depth: config.max_depth,
    }),
    schema: taxonomySchema(config.max_categories, config.max_depth),
    schemaName: 'taxonomy',
    signal: ctx.signal,
  });
  // paths that differ only in case or accents are one term (ensureTermPath): one placement, in the first spelling,
  // with the higher confidence
  const placements = new Map<string, { names: string[]; confidence: number }>();
  for (const category of answer.categories) {
    // a name of punctuation alone ("…", "-") is no category
    const names = fittingPath(category.path.map(cleanTermName).filter(hasWordCharacter));
    if (names.length === 0) continue;
    const key = names.map(foldName).join(PATH_SEPARATOR);
    const previous = placements.get(key);
    placements.set(key, {
      names: previous?.names ?? names,
      confidence: Math.max(previous?.confidence ?? Number.NEGATIVE_INFINITY, category.confidence),
    });
  }
  await writePlacements(ctx.db, ctx.document.id, [...placements.values()]);
  return {
    categories: placements.size,
    terms: [...placements.values()].reduce((n, p) => n + p.names.length, 0),
    empty: false,
  };
}

/**
 * Replaces the document's placements atomically: the terms of every path are found or created, its old
 * placements go, and the terms it was filed under before are deleted when no document and no term uses them any
 * more (deleteOrphanTerms). Every path involved is locked first, in lock order (see inLockOrder): the new ones
 * as ensureTermPath finds them, the old ones as they are.
 */
export async function writePlacements(
  db: SqlExecutor,
  documentId: number,
  placements: ReadonlyArray<{ names: string[]; confidence: number }>,
): Promise<void> {
  await db.transaction(async (tx) => {
    const before = await placedTerms(tx, documentId);
    const placed = new Set(placements.map((p) => termLockKey(p.names).join(PATH_SEPARATOR)));
    const locks = [
      ...placements.map((placement) => ({ names: placement.names, placement })),
      ...before
        .map((term) => ({ names: term.path.split(PATH_SEPARATOR), path: term.path }))
        .filter((term) => !placed.has(termLockKey(term.names).join(PATH_SEPARATOR))),
    ];
    // one placement per term, with the higher confidence (two placements may still find one term: MariaDB's
    // collation folds a little more than foldName)
    const byTerm = new Map<number, number>();
    for (const lock of inLockOrder(locks, (l) => termLockKey(l.names))) {
      if (!('placement' in lock)) {
        await lockTermPath(tx, lock.path);
        continue;
      }
      const termId = await ensureTermPath(tx, lock.placement.names);
      byTerm.set(termId, Math.max(byTerm.get(termId) ?? 0, lock.placement.confidence));
    }
    await tx.run('DELETE FROM document_taxonomy WHERE document_id = ?', [documentId]);
    for (const [termId, confidence] of byTerm) {
      await tx.run('INSERT INTO document_taxonomy (document_id, term_id, confidence) VALUES (?, ?, ?)', [
        documentId,
        termId,
        confidence,
      ]);
    }
    await deleteOrphanTerms(
      tx,
      before.map((term) => term.id).filter((id) => !byTerm.has(id)),
    );
  });
}
