/**
 * The retrieval evaluation behind `npm run eval:retrieval` and test/integration/eval/retrieval.test.ts:
 * ingests ../shared/corpus/md with the Standard pipeline on the embedded default (SQLite, local-hash-v2) into
 * a fresh data folder, asks every question of eval/retrieval-questions.json through searchChunks and scores
 * where the answering section and document turn up in the top results.
 *
 * Three levels, each as hit@1, hit@5 and MRR@10 (reciprocal rank of the first match in the top 10, 0 when
 * there is none):
 * - section (heading_path): the hit is from the expected file and the heading_path it cites contains the
 *   expected section heading; the strict definition of the issue.
 * - section (span): the same, or the chunk reaches into the expected section. The chunker merges short
 *   sections (laws: many paragraphs of 100-400 characters) into one chunk, so "§ 4 Wartezeit" lives in the
 *   chunk that starts in "§ 3 Dauer des Urlaubs"; a hit cites the section of its chunk the query matches best
 *   (src/retrieval/cited-section.ts), and the span counts the chunk whichever it cites. The span is read
 *   from the chunk's metadata (sectionIndex..lastSectionIndex) against the sections cpe builds from the
 *   stored extraction (buildSections, as the chunk step does when the pipeline has no structure step).
 * - document: the chunk is from the expected file.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadExtraction } from '../../src/content/extraction.js';
import type { SqlExecutor } from '../../src/db/sql.js';
import { LOCAL_EMBEDDER_MODEL } from '../../src/embed/local-hash.js';
import { open } from '../../src/index.js';
import { searchChunks } from '../../src/retrieval/search.js';
import { buildSections, type Section } from '../../src/text/structure.js';
import { parseJsonColumn } from '../../src/util/json.js';

export interface RetrievalQuestion {
  id: string;
  question: string;
  /** file name in the corpus folder (no directory) */
  file: string;
  /** heading text of the answering section, as it appears as one element of heading_path */
  section: string;
  /** words of the answering passage; checked to occur in that section's text */
  answer_hint: string;
}

export interface RankedHit {
  file: string;
  headingPath: string[];
  score: number;
}

export interface QuestionResult extends RetrievalQuestion {
  /** 1-based rank of the first hit per level within the top `limit`, null when none */
  sectionRank: number | null;
  spanRank: number | null;
  documentRank: number | null;
  top: RankedHit[];
}

export interface LevelMetrics {
  hitAt1: number;
  hitAt5: number;
  mrr: number;
}

export interface RetrievalMetrics {
  questions: number;
  files: number;
  section: LevelMetrics;
  span: LevelMetrics;
  document: LevelMetrics;
}

export interface RetrievalEvalReport {
  metrics: RetrievalMetrics;
  results: QuestionResult[];
  /** defects of the question set itself (unknown file or section, hint not in the section); empty when sound */
  problems: string[];
  embedder: string;
  documents: number;
  chunks: number;
  limit: number;
  /** step configs that were changed for this run (step_type -> config), for comparisons */
  stepConfigs: Record<string, Record<string, unknown>>;
  ingestMs: number;
  searchMs: number;
}

export interface RetrievalEvalOptions {
  /** the corpus root (holds md/); default ../shared/corpus from the project root */
  corpusDir?: string;
  questionsPath?: string;
  /** results per question (default 10) */
  limit?: number;
  /** replace the config of Standard's steps of these types before the run, e.g. { embed: { max_embed_chars: 2000 } } */
  stepConfigs?: Record<string, Record<string, unknown>>;
  /** progress lines (ingest summary, per question) */
  onProgress?: (line: string) => void;
}

export const projectRoot = path.resolve(import.meta.dirname, '../..');
export const defaultCorpusDir = path.resolve(projectRoot, '../shared/corpus');
export const defaultQuestionsPath = path.join(projectRoot, 'eval/retrieval-questions.json');

/** Reads and checks the shape of the question set (ids unique, every field a non-empty string). */
export function loadQuestions(file: string = defaultQuestionsPath): RetrievalQuestion[] {
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (!Array.isArray(parsed)) throw new Error(`${file}: expected a JSON array of questions`);
  const seen = new Set<string>();
  return parsed.map((raw, i) => {
    const q = raw as Record<string, unknown>;
    for (const key of ['id', 'question', 'file', 'section', 'answer_hint']) {
      if (typeof q[key] !== 'string' || (q[key] as string).trim() === '') {
        throw new Error(`${file}: question #${i + 1} needs a non-empty string '${key}'`);
      }
    }
    const question = q as unknown as RetrievalQuestion;
    if (seen.has(question.id)) throw new Error(`${file}: duplicate question id '${question.id}'`);
    seen.add(question.id);
    return question;
  });
}

/** Heading and passage comparisons ignore line breaks, runs of white space and Unicode composition. */
const norm = (text: string) => text.normalize('NFC').replace(/\s+/g, ' ').trim();

/** 1-based rank of the first element that matches, null when none does. */
function firstRank<T>(items: readonly T[], match: (item: T) => boolean): number | null {
  const index = items.findIndex(match);
  return index < 0 ? null : index + 1;
}

function levelMetrics(ranks: ReadonlyArray<number | null>): LevelMetrics {
  const n = ranks.length || 1;
  const share = (k: number) => ranks.filter((r) => r !== null && r <= k).length / n;
  const mrr = ranks.reduce<number>((sum, r) => sum + (r === null ? 0 : 1 / r), 0) / n;
  return { hitAt1: share(1), hitAt5: share(5), mrr };
}

export function computeMetrics(results: readonly QuestionResult[]): RetrievalMetrics {
  return {
    questions: results.length,
    files: new Set(results.map((r) => r.file)).size,
    section: levelMetrics(results.map((r) => r.sectionRank)),
    span: levelMetrics(results.map((r) => r.spanRank)),
    document: levelMetrics(results.map((r) => r.documentRank)),
  };
}

/** Environment for the evaluation: no server, no config file, no secret can switch it off the embedded default. */
function embeddedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('CPE_') || key === 'ANTHROPIC_API_KEY' || key === 'QDRANT_API_KEY') continue;
    env[key] = value;
  }
  return env;
}

/**
 * Runs the whole evaluation in a fresh temporary data folder (removed afterwards). Throws when the corpus
 * is missing (callers check first) or when documents fail to ingest; question-set defects are returned in
 * `problems`, not thrown, so a report still shows everything else.
 */
export async function runRetrievalEval(options: RetrievalEvalOptions = {}): Promise<RetrievalEvalReport> {
  const corpusDir = options.corpusDir ?? defaultCorpusDir;
  const source = path.join(corpusDir, 'md');
  if (!existsSync(source)) throw new Error(`no corpus folder at ${source}`);
  const questions = loadQuestions(options.questionsPath);
  const limit = options.limit ?? 10;
  const stepConfigs = options.stepConfigs ?? {};
  const progress = options.onProgress ?? (() => {});

  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cpe-eval-retrieval-'));
  // the data folder doubles as cwd so that no cpe.config.json of the caller's folder is picked up
  const cpe = await open({ flags: { dataDir, logLevel: 'warn' }, env: embeddedEnv(), cwd: dataDir });
  try {
    const db = cpe.engine.dbs.content.sql;
    for (const [stepType, config] of Object.entries(stepConfigs)) {
      await db.run(
        `UPDATE pipeline_steps SET config = ? WHERE step_type = ?
           AND pipeline_id = (SELECT id FROM pipeline_configs WHERE name = 'Standard')`,
        [JSON.stringify(config), stepType],
      );
    }

    const ingestStarted = Date.now();
    const summary = await cpe.run({ pipeline: 'Standard', source });
    const ingestMs = Date.now() - ingestStarted;
    if (summary.failures.length > 0) {
      const list = summary.failures.map((f) => `${f.path}: ${f.error}`).join('; ');
      throw new Error(`ingesting ${source} failed for ${summary.failures.length} document(s): ${list}`);
    }
    const embedder = await cpe.engine.providers.embedder();
    if (embedder.model !== LOCAL_EMBEDDER_MODEL) {
      throw new Error(`expected the local embedder ${LOCAL_EMBEDDER_MODEL}, got ${embedder.model}`);
    }
    const [counts] = await db.query<{ documents: number; chunks: number }>(
      `SELECT (SELECT COUNT(*) FROM documents WHERE is_latest = 1 AND status = 'done') AS documents,
              (SELECT COUNT(*) FROM chunks WHERE status = 'embedded') AS chunks`,
    );
    progress(
      `ingested ${counts!.documents} documents, ${counts!.chunks} chunks in ${(ingestMs / 1000).toFixed(1)} s`,
    );

    // sections per file, built from the stored extraction exactly as the chunk step builds them
    const sectionsByFile = new Map<string, { documentId: number; text: string; sections: Section[] }>();
    const sectionsOf = async (file: string) => {
      if (sectionsByFile.has(file)) return sectionsByFile.get(file);
      const [row] = await db.query<{ id: number }>(
        `SELECT d.id FROM documents d JOIN document_extracts e ON e.document_id = d.id
         WHERE d.filename = ? AND d.is_latest = 1 AND d.status <> 'deleted'`,
        [file],
      );
      if (!row) return undefined;
      const doc = await loadExtraction(db, Number(row.id));
      if (!doc) return undefined;
      const entry = { documentId: Number(row.id), text: doc.text, sections: buildSections(doc) };
      sectionsByFile.set(file, entry);
      return entry;
    };

    const problems: string[] = [];
    for (const q of questions) {
      const entry = await sectionsOf(q.file);
      if (!entry) {
        problems.push(`${q.id}: file ${q.file} is not among the ingested documents`);
        continue;
      }
      const matching = entry.sections.filter((s) => s.headingPath.some((h) => norm(h) === norm(q.section)));
      if (matching.length === 0) {
        problems.push(`${q.id}: ${q.file} has no section headed '${q.section}'`);
        continue;
      }
      const inSection = matching.some((s) =>
        norm(entry.text.slice(s.start, s.end)).includes(norm(q.answer_hint)),
      );
      if (!inSection)
        problems.push(`${q.id}: answer_hint '${q.answer_hint}' is not in section '${q.section}'`);
    }

    const searchStarted = Date.now();
    const results: QuestionResult[] = [];
    for (const q of questions) {
      const hits = await searchChunks({ db, providers: cpe.engine.providers }, q.question, { limit });
      const spans = await chunkSpans(
        db,
        hits.map((h) => h.chunk_id),
      );
      const expected = norm(q.section);
      const entry = await sectionsOf(q.file);
      const isFile = (sourcePath: string) => path.basename(sourcePath) === q.file;
      const headed = (headingPath: readonly string[]) => headingPath.some((h) => norm(h) === expected);
      const reaches = (chunkId: number) => {
        const span = spans.get(chunkId);
        if (!entry || !span) return false;
        for (let i = span.first; i <= span.last; i++) {
          if (headed(entry.sections[i]?.headingPath ?? [])) return true;
        }
        return false;
      };
      const result: QuestionResult = {
        ...q,
        sectionRank: firstRank(hits, (h) => isFile(h.source_path) && headed(h.heading_path)),
        spanRank: firstRank(
          hits,
          (h) => isFile(h.source_path) && (headed(h.heading_path) || reaches(h.chunk_id)),
        ),
        documentRank: firstRank(hits, (h) => isFile(h.source_path)),
        top: hits.map((h) => ({
          file: path.basename(h.source_path),
          headingPath: h.heading_path,
          score: h.score,
        })),
      };
      results.push(result);
      progress(
        `${q.id} section ${result.sectionRank ?? '-'} span ${result.spanRank ?? '-'} document ${result.documentRank ?? '-'}`,
      );
    }
    const searchMs = Date.now() - searchStarted;

    return {
      metrics: computeMetrics(results),
      results,
      problems,
      embedder: embedder.model,
      documents: Number(counts!.documents),
      chunks: Number(counts!.chunks),
      limit,
      stepConfigs,
      ingestMs,
      searchMs,
    };
  } finally {
    await cpe.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Section indexes each chunk covers, from the metadata the chunk step stores (sectionIndex..lastSectionIndex). */
async function chunkSpans(
  db: SqlExecutor,
  chunkIds: readonly number[],
): Promise<Map<number, { first: number; last: number }>> {
  const spans = new Map<number, { first: number; last: number }>();
  if (chunkIds.length === 0) return spans;
  const rows = await db.query<{ id: number; metadata: unknown }>(
    `SELECT id, metadata FROM chunks WHERE id IN (${chunkIds.map(() => '?').join(',')})`,
    [...chunkIds],
  );
  for (const row of rows) {
    const meta = parseJsonColumn<Record<string, unknown>>(row.metadata, {});
    const first = Number(meta.sectionIndex);
    const last = Number(meta.lastSectionIndex ?? meta.sectionIndex);
    if (Number.isInteger(first) && Number.isInteger(last)) spans.set(Number(row.id), { first, last });
  }
  return spans;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s+/g, ' ');

/** The report as Markdown: the metrics table, the run's facts and a per-question details list. */
export function formatReport(report: RetrievalEvalReport): string {
  const { metrics } = report;
  const lines: string[] = [];
  lines.push('# Retrieval evaluation');
  lines.push('');
  lines.push(
    `Standard pipeline over \`../shared/corpus/md\` on the embedded default: embedder \`${report.embedder}\`, ` +
      `${report.documents} documents, ${report.chunks} chunks; ${metrics.questions} German questions over ` +
      `${metrics.files} files (\`eval/retrieval-questions.json\`), top ${report.limit} per question. ` +
      'Produced by `npm run eval:retrieval`.',
  );
  const changed = Object.entries(report.stepConfigs);
  if (changed.length > 0) {
    lines.push('');
    lines.push(
      `Step configs changed for this run: ${changed.map(([t, c]) => `\`${t}\` = \`${JSON.stringify(c)}\``).join(', ')}.`,
    );
  }
  lines.push('');
  lines.push(`| level | hit@1 | hit@5 | MRR@${report.limit} | questions |`);
  lines.push('|---|---:|---:|---:|---:|');
  const row = (name: string, m: LevelMetrics) =>
    lines.push(
      `| ${name} | ${pct(m.hitAt1)} | ${pct(m.hitAt5)} | ${m.mrr.toFixed(3)} | ${metrics.questions} |`,
    );
  row('section (heading_path)', metrics.section);
  row('section (chunk reaches into it)', metrics.span);
  row('document', metrics.document);
  lines.push('');
  lines.push(
    'section (heading_path): a result from the right file whose cited heading_path contains the expected ' +
      'section heading (of the sections its chunk reaches into, a hit cites the one the query matches best). ' +
      'section (chunk reaches into it): also counts a chunk that reaches into the expected section, whichever it cites ' +
      '(short sections are merged into one chunk). ' +
      'document: a chunk from the right file. MRR is the mean of 1/rank of the first match, 0 when none is in the top results.',
  );
  if (report.problems.length > 0) {
    lines.push('');
    lines.push('## Problems in the question set');
    lines.push('');
    for (const p of report.problems) lines.push(`- ${p}`);
  }
  lines.push('');
  lines.push(
    '<details><summary>Per question: rank of the first match (section / span / document) and the top hit</summary>',
  );
  lines.push('');
  const rank = (r: number | null) => (r === null ? '–' : String(r));
  for (const r of report.results) {
    const top = r.top[0];
    const topText = top ? `${top.file} › ${top.headingPath.at(-1) ?? '(no heading)'}` : '(no result)';
    lines.push(
      `- **${r.id}** ${rank(r.sectionRank)} / ${rank(r.spanRank)} / ${rank(r.documentRank)} — ` +
        `${cell(r.question)} _(expected ${r.file} › ${cell(r.section)}; top: ${cell(topText)})_`,
    );
  }
  lines.push('');
  lines.push('</details>');
  lines.push('');
  return lines.join('\n');
}
