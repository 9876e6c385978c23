import { printable, printableLines } from '../util/printable.js';
import type { BuiltContext } from './context.js';
import type { SearchHit } from './search.js';
import type { VerifyReport } from './verify.js';

const SNIPPET_CHARS = 240;

/** One line of text: whitespace collapsed, cut at a word boundary with an ellipsis. */
export function snippet(text: string, maxChars = SNIPPET_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= maxChars) return flat;
  const cut = flat.slice(0, maxChars);
  const space = cut.lastIndexOf(' ');
  return `${(space > maxChars * 0.6 ? cut.slice(0, space) : cut).trimEnd()} …`;
}

/**
 * `cpe search` without --json: rank, score, title, heading path, page, snippet. Paths and titles through printable:
 * a file name's control characters are shown, not sent to the terminal (--json keeps them exact).
 */
export function formatSearchHits(query: string, hits: readonly SearchHit[]): string {
  if (hits.length === 0) return `No results for "${printable(query)}".`;
  const lines: string[] = [];
  hits.forEach((hit, i) => {
    const where = [
      hit.heading_path.length > 0 ? hit.heading_path.join(' > ') : undefined,
      hit.page !== null ? `page ${hit.page}` : undefined,
    ]
      .filter(Boolean)
      .join(' · ');
    lines.push(`${i + 1}. ${hit.score.toFixed(3)}  ${printable(hit.document_title)}`);
    if (where) lines.push(`   ${printable(where)}`);
    // from the cited section: the chunk may start with the end of the section before it
    lines.push(`   ${printable(snippet(hit.content.slice(hit.section_offset)))}`);
    lines.push(`   ${printable(hit.source_path)}`);
  });
  return lines.join('\n');
}

/** `cpe search --json`: the documented hit fields. */
export function searchHitsJson(hits: readonly SearchHit[]) {
  return hits.map((h) => ({
    score: h.score,
    document_id: h.document_id,
    document_title: h.document_title,
    source_path: h.source_path,
    heading_path: h.heading_path,
    page: h.page,
    chunk_index: h.chunk_index,
    content: h.content,
  }));
}

/**
 * `cpe context` without --json prints the context text itself (what a prompt gets), its control characters shown
 * (a title stored before titles from file names were normalised may hold an escape sequence) and its lines kept.
 */
export function formatContext(context: BuiltContext, query: string): string {
  if (context.sources.length > 0) return printableLines(context.text);
  return context.matched === 0
    ? `No context for "${printable(query)}": no chunk matches it.`
    : `No context for "${printable(query)}": the best of ${context.matched} matching chunks does not fit the token budget (--max-tokens), not even its title.`;
}

/** `cpe context --json`: the text plus its sources (title, path, heading path, score). */
export function contextJson(context: BuiltContext) {
  return {
    text: context.text,
    tokens: context.tokens,
    sources: context.sources.map((s) => ({
      n: s.n,
      title: s.title,
      path: s.path,
      heading_path: s.heading_path,
      score: s.score,
      document_id: s.document_id,
      chunk_index: s.chunk_index,
      page: s.page,
    })),
  };
}

function describeState(report: VerifyReport): string[] {
  const c = report.counts;
  return [
    `  chunks of its current documents: ${c.expected}   points: ${c.points}`,
    `  missing points: ${c.missing} (not embedded: ${c.unembedded})   orphan points: ${c.orphans}   ` +
      `stale versions: ${c.stale}   outdated vectors: ${c.outdated}   wrong size: ${c.wrongSize}   ` +
      `wrong chunk refs: ${c.wrongChunkRefs}`,
    ...(c.foreign > 0 ? [`  points of documents another collection holds: ${c.foreign}`] : []),
    ...(c.failedChunks > 0 ? [`  chunks the embedder rejected (status failed): ${c.failedChunks}`] : []),
    ...(c.entitiesWithoutPoint > 0 || c.entityOrphans > 0
      ? [
          `  entities without a point: ${c.entitiesWithoutPoint}   entity points of no entity: ${c.entityOrphans}`,
        ]
      : []),
    ...(c.inFlight > 0
      ? [`  points of versions still being processed (kept for when they complete): ${c.inFlight}`]
      : []),
  ];
}

/** `cpe verify` without --json. */
export function formatVerifyReport(report: VerifyReport): string {
  const lines = [
    `collection '${report.collection}' (${report.backend}, ${report.location}): ` +
      (report.collectionExists
        ? `model ${report.collectionModel ?? 'unknown'}, ${report.collectionDimensions ?? '?'} dimensions`
        : 'does not exist'),
    `configured embedder: ${report.model}, ${report.dimensions} dimensions`,
  ];
  if (report.mismatch) {
    lines.push(`MISMATCH: ${report.mismatch}`);
    return lines.join('\n');
  }
  lines.push(...describeState(report));
  for (const problem of report.problems) lines.push(`  - ${problem}`);
  if (report.repaired && report.after) {
    const r = report.repaired;
    lines.push(
      `repaired: ${r.pointsDeleted} points deleted, ${r.documentsRestored} documents restored ` +
        `(${r.chunksEmbedded} chunks given vectors)${r.entitiesStored ? `, ${r.entitiesStored} entity points stored` : ''}`,
    );
    lines.push('after repair:', ...describeState(report.after));
    for (const problem of report.after.problems) lines.push(`  - ${problem}`);
  }
  // a collection named with --collection is verified without the entities: the output says so, not only OK
  if (report.entitiesNotChecked) lines.push(report.entitiesNotChecked);
  lines.push(
    report.ok ? 'OK: SQL and the vector index agree.' : 'NOT OK: SQL and the vector index disagree.',
  );
  return lines.join('\n');
}
