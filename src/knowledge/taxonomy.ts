import { insertOrExistingId } from '../db/insert-or-existing.js';
import type { SqlExecutor } from '../db/sql.js';
import { fillPrompt } from '../llm/prompts.js';
import { cutText } from '../text/cut.js';
import { countTokens } from '../text/tokenizer.js';
import { documentTitle, loadChunks, loadSections } from './chunks.js';
import { type Asker, ask, type KnowledgeContext } from './llm-step.js';
import { deleteOrphanTerms, lockingRead } from './retract.js';

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

export const PATH_SEPARATOR = ' > ';

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

/** The term of a path, created with its ancestors when missing. Returns the leaf's id. */
export async function ensureTermPath(db: SqlExecutor, names: readonly string[]): Promise<number> {
  let parentId: number | null = null;
  const parts: string[] = [];
  for (const name of names) {
    parts.push(name);
    const path = parts.join(PATH_SEPARATOR);
    // locked while the document's placements are written (see lockingRead)
    const rows = await db.query<{ id: number }>(
      `SELECT id FROM taxonomy_terms WHERE path = ?${lockingRead(db)}`,
      [path],
    );
    if (rows[0]) {
      parentId = Number(rows[0].id);
    } else {
      parentId = await insertOrExistingId(
        db,
        'INSERT INTO taxonomy_terms (name, parent_id, path) VALUES (?, ?, ?)',
        [name, parentId, path],
      );
    }
  }
  return parentId!;
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
  // prompt as the first run, or it would miss the response cache)
  const existing = await ctx.db.query<{ path: string }>(
    `SELECT DISTINCT t.path FROM taxonomy_terms t JOIN document_taxonomy d ON d.term_id = t.id
      WHERE d.document_id <> ? ORDER BY t.path LIMIT ${Math.floor(config.existing_terms_limit)}`,
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
  const placements = new Map<string, { names: string[]; confidence: number }>();
  for (const category of answer.categories) {
    const names = fittingPath(category.path.map(cleanTermName).filter(Boolean));
    if (names.length === 0) continue;
    const key = names.join(PATH_SEPARATOR);
    const previous = placements.get(key);
    if (!previous || previous.confidence < category.confidence)
      placements.set(key, { names, confidence: category.confidence });
  }
  await ctx.db.transaction(async (tx) => {
    await tx.run('DELETE FROM document_taxonomy WHERE document_id = ?', [ctx.document.id]);
    // two paths that differ only in case or accents are one term where the collation says so (MariaDB): one
    // placement per term, with the higher confidence
    const byTerm = new Map<number, number>();
    for (const placement of placements.values()) {
      const termId = await ensureTermPath(tx, placement.names);
      byTerm.set(termId, Math.max(byTerm.get(termId) ?? 0, placement.confidence));
    }
    for (const [termId, confidence] of byTerm) {
      await tx.run('INSERT INTO document_taxonomy (document_id, term_id, confidence) VALUES (?, ?, ?)', [
        ctx.document.id,
        termId,
        confidence,
      ]);
    }
    await deleteOrphanTerms(tx);
  });
  return {
    categories: placements.size,
    terms: [...placements.values()].reduce((n, p) => n + p.names.length, 0),
    empty: false,
  };
}
