import type { SqlExecutor } from '../db/sql.js';
import { fillPrompt } from '../llm/prompts.js';
import { countTokens } from '../text/tokenizer.js';
import { parseJsonColumn } from '../util/json.js';
import {
  type ChunkRow,
  chunksOfPage,
  chunksOfSection,
  documentTitle,
  headingLabel,
  loadChunks,
  loadPages,
  loadSections,
  sourceBlock,
} from './chunks.js';
import { keepItems } from './keep-items.js';
import { type Asker, ask, forEachItem, type KnowledgeContext } from './llm-step.js';

export type KnowledgeLevel = 'page' | 'section' | 'document';

export interface KnowledgeConfig {
  max_statements: number;
  /** material per call; sources beyond it are left out (logged) */
  max_input_tokens: number;
}

export const knowledgeConfigProperties = (maxStatements: number) =>
  ({
    max_statements: { type: 'integer', minimum: 1, maximum: 100, default: maxStatements },
    max_input_tokens: { type: 'integer', minimum: 200, maximum: 200000, default: 6000 },
  }) as const;

export const KNOWLEDGE_PROMPT_KEYS = ['level', 'title', 'scope', 'max_statements', 'sources'] as const;
export const VALIDATE_PROMPT_KEYS = ['statement', 'sources'] as const;

export function statementSchema(maxStatements: number, sourceIds: readonly string[]) {
  return {
    type: 'object',
    properties: {
      statements: {
        type: 'array',
        maxItems: maxStatements,
        items: {
          type: 'object',
          properties: {
            statement: { type: 'string', minLength: 5, maxLength: 2000 },
            sources: { type: 'array', minItems: 1, items: { type: 'string', enum: [...sourceIds] } },
          },
          required: ['statement', 'sources'],
          additionalProperties: false,
        },
      },
    },
    required: ['statements'],
    additionalProperties: false,
  };
}

export const VALIDATION_SCHEMA = {
  type: 'object',
  properties: {
    verdict: { type: 'string', enum: ['grounded', 'unsupported'] },
    reason: { type: 'string', minLength: 1, maxLength: 2000 },
  },
  required: ['verdict', 'reason'],
  additionalProperties: false,
};

/** One piece of material the model may cite, and the chunks it stands for. */
export interface StatementSource {
  id: string;
  text: string;
  chunkIds: number[];
}

export interface Statement {
  statement: string;
  chunkIds: number[];
}

/** Sources in order until the token budget is used (at least one). */
function withinBudget(
  sources: readonly StatementSource[],
  budget: number,
): { used: StatementSource[]; dropped: number } {
  const used: StatementSource[] = [];
  let tokens = 0;
  for (const s of sources) {
    const t = countTokens(s.text);
    if (used.length > 0 && tokens + t > budget) break;
    used.push(s);
    tokens += t;
  }
  return { used, dropped: sources.length - used.length };
}

/** The model's key statements about the material, each traced to the chunks behind the sources it cites. */
export async function extractStatements(
  asker: Asker,
  ctx: Pick<KnowledgeContext, 'signal' | 'log'>,
  request: {
    level: KnowledgeLevel;
    title: string;
    scope: string;
    sources: readonly StatementSource[];
    config: KnowledgeConfig;
  },
): Promise<Statement[]> {
  const { used, dropped } = withinBudget(request.sources, request.config.max_input_tokens);
  if (dropped > 0) {
    ctx.log.info(
      `${request.scope}: ${dropped} of ${request.sources.length} sources beyond max_input_tokens were left out`,
    );
  }
  const byId = new Map(used.map((s) => [s.id, s]));
  const schema = statementSchema(request.config.max_statements, [...byId.keys()]);
  const answer = await ask<{ statements: Array<{ statement: string; sources: string[] }> }>(asker, {
    prompt: fillPrompt(asker.template, {
      level: { page: 'Seite', section: 'Abschnitt', document: 'Dokument' }[request.level],
      title: request.title,
      scope: request.scope,
      max_statements: request.config.max_statements,
      sources: used.map((s) => sourceBlock(s.id, s.text)).join('\n\n'),
    }),
    schema,
    schemaName: `knowledge_${request.level}`,
    // a statement over a limit is dropped below, not the unit's whole answer
    limits: 'caller',
    signal: ctx.signal,
  });
  // as stored: NFC (a statement composed or decomposed is one statement), trimmed (a blank one is too short then)
  const statements = keepItems(
    ctx.log,
    { level: request.level, scope: request.scope },
    { name: 'statements', schema: schema.properties.statements },
    answer.statements,
    (s) => ({ ...s, statement: s.statement.normalize('NFC').trim() }),
  );
  return statements.map((s) => ({
    statement: s.statement,
    chunkIds: [...new Set(s.sources.flatMap((id) => byId.get(id)?.chunkIds ?? []))].sort((a, b) => a - b),
  }));
}

/**
 * Sources are labelled by position (Q1, Q2, ...), never by row id: ids change when a step reruns, and a
 * changed prompt would miss the response cache.
 */
const chunkSources = (chunks: readonly ChunkRow[]): StatementSource[] =>
  chunks.map((c, i) => ({ id: `Q${i + 1}`, text: c.content, chunkIds: [c.id] }));

interface Unit {
  pageNumber: number | null;
  sectionIndex: number | null;
  scope: string;
  sources: StatementSource[];
}

/** Replaces the document's items of one level atomically. */
async function writeItems(
  db: SqlExecutor,
  documentId: number,
  level: KnowledgeLevel,
  rows: Array<{ unit: Unit; statements: Statement[] }>,
  model: string,
): Promise<number> {
  let written = 0;
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM knowledge_items WHERE document_id = ? AND level = ?', [documentId, level]);
    for (const { unit, statements } of rows) {
      // a statement made twice of a unit is stored once (in NFC: composed and decomposed "Ü" are one)
      const made = new Set<string>();
      for (const s of statements) {
        if (s.chunkIds.length === 0) continue; // no provenance, no statement
        const statement = s.statement.normalize('NFC').trim();
        const key = statement.replace(/\s+/g, ' ').toLowerCase();
        if (key === '' || made.has(key)) continue;
        made.add(key);
        await tx.run(
          `INSERT INTO knowledge_items (document_id, level, page_number, section_index, statement, sources, model)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
          [
            documentId,
            level,
            unit.pageNumber,
            unit.sectionIndex,
            statement,
            JSON.stringify(s.chunkIds),
            model,
          ],
        );
        written++;
      }
    }
  });
  return written;
}

async function runUnits(
  ctx: KnowledgeContext,
  asker: Asker,
  config: KnowledgeConfig,
  level: KnowledgeLevel,
  units: Unit[],
) {
  const title = await documentTitle(ctx.db, ctx.document.id);
  const answers = await forEachItem(
    ctx,
    asker,
    units,
    (u) => ({ level, page: u.pageNumber, section: u.sectionIndex }),
    (unit) =>
      extractStatements(asker, ctx, { level, title, scope: unit.scope, sources: unit.sources, config }),
  );
  const rows = units.map((unit, i) => ({ unit, statements: answers[i] ?? [] }));
  const written = await writeItems(
    ctx.db,
    ctx.document.id,
    level,
    rows,
    `${asker.llm.provider}:${asker.llm.model}`.slice(0, 100),
  );
  return { units: units.length, statements: written };
}

/** Units of work per level, for the steps and for dry-run estimates. `undefined` + reason when there are none. */
export async function knowledgeUnits(
  ctx: KnowledgeContext,
  level: KnowledgeLevel,
  options: { maxSectionLevel?: number } = {},
): Promise<{ units: Unit[]; reason?: string }> {
  const chunks = await loadChunks(ctx.db, ctx.document.id);
  if (chunks.length === 0) return { units: [], reason: 'the document has no chunks' };
  if (level === 'page') {
    const pages = await loadPages(ctx.db, ctx.document.id);
    const numbers =
      pages.length > 0
        ? pages.map((p) => p.pageNumber)
        : [...new Set(chunks.map((c) => c.pageStart).filter((p) => p !== null))];
    if (!chunks.some((c) => c.pageStart !== null))
      return { units: [], reason: 'the chunks carry no page numbers' };
    const units = numbers
      .map((page) => ({ page, sources: chunkSources(chunksOfPage(chunks, page!)) }))
      .filter((u) => u.sources.length > 0)
      .map((u) => ({
        pageNumber: u.page!,
        sectionIndex: null,
        scope: `Seite ${u.page}`,
        sources: u.sources,
      }));
    return { units };
  }
  if (level === 'section') {
    const sections = (await loadSections(ctx.db, ctx.document.id)).filter(
      (s) => s.level <= (options.maxSectionLevel ?? 2),
    );
    if (sections.length === 0) return { units: [], reason: 'the document has no sections' };
    const units = sections
      .map((s) => ({ s, sources: chunkSources(chunksOfSection(chunks, s)) }))
      .filter((u) => u.sources.length > 0)
      .map((u) => ({
        pageNumber: null,
        sectionIndex: u.s.sectionIndex,
        scope: `Abschnitt „${headingLabel(u.s.headingPath.length > 0 ? u.s.headingPath : [u.s.heading])}“`,
        sources: u.sources,
      }));
    return { units };
  }
  // document level: the section statements when there are any, else the page statements, else the chunks
  for (const below of ['section', 'page'] as const) {
    const items = await ctx.db.query<{ id: number; statement: string; sources: string }>(
      'SELECT id, statement, sources FROM knowledge_items WHERE document_id = ? AND level = ? ORDER BY id',
      [ctx.document.id, below],
    );
    if (items.length > 0) {
      const sources = items.map((item, i) => ({
        id: `Q${i + 1}`,
        text: item.statement,
        chunkIds: parseJsonColumn<number[]>(item.sources, []),
      }));
      return { units: [{ pageNumber: null, sectionIndex: null, scope: 'das ganze Dokument', sources }] };
    }
  }
  return {
    units: [
      { pageNumber: null, sectionIndex: null, scope: 'das ganze Dokument', sources: chunkSources(chunks) },
    ],
  };
}

/** knowledge_page / _section / _document: key statements of each unit with their chunks. */
export async function runKnowledgeLevel(
  ctx: KnowledgeContext,
  asker: Asker,
  config: KnowledgeConfig,
  level: KnowledgeLevel,
  options: { maxSectionLevel?: number } = {},
): Promise<{ units: number; statements: number; reason?: string }> {
  const { units, reason } = await knowledgeUnits(ctx, level, options);
  if (units.length === 0) return { units: 0, statements: 0, reason: reason ?? `no ${level}s with chunks` };
  return runUnits(ctx, asker, config, level, units);
}

/**
 * knowledge_validate: each statement of the document checked against the text of its source chunks; marked
 * grounded or unsupported with the model's reason. A statement whose chunks are gone is unsupported without
 * asking. Updates all items in one transaction at the end.
 */
export async function runKnowledgeValidation(
  ctx: KnowledgeContext,
  asker: Asker,
  config: { max_input_tokens: number },
) {
  const items = await ctx.db.query<{ id: number; statement: string; sources: string }>(
    'SELECT id, statement, sources FROM knowledge_items WHERE document_id = ? ORDER BY id',
    [ctx.document.id],
  );
  const chunks = new Map((await loadChunks(ctx.db, ctx.document.id)).map((c) => [c.id, c]));
  const results = await forEachItem(
    ctx,
    asker,
    items,
    (item) => ({ knowledgeItemId: item.id }),
    async (item) => {
      const sourceChunks = parseJsonColumn<number[]>(item.sources, [])
        .map((id) => chunks.get(Number(id)))
        .filter((c): c is ChunkRow => c !== undefined);
      if (sourceChunks.length === 0)
        return { verdict: 'unsupported', reason: 'Die Quellen der Aussage existieren nicht mehr.' };
      const { used } = withinBudget(chunkSources(sourceChunks), config.max_input_tokens);
      return ask<{ verdict: 'grounded' | 'unsupported'; reason: string }>(asker, {
        prompt: fillPrompt(asker.template, {
          statement: item.statement,
          sources: used.map((s) => sourceBlock(s.id, s.text)).join('\n\n'),
        }),
        schema: VALIDATION_SCHEMA,
        schemaName: 'knowledge_validation',
        signal: ctx.signal,
      });
    },
  );
  await ctx.db.transaction(async (tx) => {
    for (const [i, result] of results.entries()) {
      if (!result) continue;
      await tx.run('UPDATE knowledge_items SET validation = ?, validation_reason = ? WHERE id = ?', [
        result.verdict,
        result.reason.trim(),
        items[i]!.id,
      ]);
    }
  });
  const grounded = results.filter((r) => r?.verdict === 'grounded').length;
  const unsupported = results.filter((r) => r && r.verdict !== 'grounded').length;
  return { items: items.length, grounded, unsupported };
}
