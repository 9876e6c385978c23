import type { SqlExecutor } from '../db/sql.js';
import { marks, rowSlices } from '../db/statement-shapes.js';
import type { Segment } from '../text/segment.js';
import type { Section } from '../text/structure.js';
import { parseJsonColumn } from '../util/json.js';

async function replaceRows(
  db: SqlExecutor,
  table: string,
  documentId: number,
  columns: string[],
  rows: unknown[][],
) {
  await db.transaction(async (tx) => {
    await tx.run(`DELETE FROM ${table} WHERE document_id = ?`, [documentId]);
    const group = `(${marks(columns.length)})`;
    for (const slice of rowSlices(tx.dialect, rows, 200)) {
      await tx.run(
        `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${slice.map(() => group).join(', ')}`,
        slice.flat(),
      );
    }
  });
}

export async function saveSections(db: SqlExecutor, documentId: number, sections: Section[]): Promise<void> {
  await replaceRows(
    db,
    'document_sections',
    documentId,
    [
      'document_id',
      'section_index',
      'parent_index',
      'level',
      'heading',
      'heading_path',
      'start_offset',
      'end_offset',
      'page_start',
      'page_end',
    ],
    sections.map((s) => [
      documentId,
      s.index,
      s.parentIndex,
      s.level,
      s.heading,
      JSON.stringify(s.headingPath),
      s.start,
      s.end,
      s.pageStart,
      s.pageEnd,
    ]),
  );
}

export async function loadSections(db: SqlExecutor, documentId: number): Promise<Section[] | undefined> {
  const rows = await db.query<Record<string, any>>(
    'SELECT * FROM document_sections WHERE document_id = ? ORDER BY section_index',
    [documentId],
  );
  if (rows.length === 0) return undefined;
  return rows.map((r) => ({
    index: Number(r.section_index),
    parentIndex: r.parent_index === null ? null : Number(r.parent_index),
    level: Number(r.level),
    heading: r.heading,
    headingPath: parseJsonColumn<string[]>(r.heading_path, []),
    start: Number(r.start_offset),
    end: Number(r.end_offset),
    pageStart: Number(r.page_start),
    pageEnd: Number(r.page_end),
  })) as Section[];
}

export async function saveSegments(db: SqlExecutor, documentId: number, segments: Segment[]): Promise<void> {
  await replaceRows(
    db,
    'document_segments',
    documentId,
    [
      'document_id',
      'segment_index',
      'section_index',
      'type',
      'start_offset',
      'end_offset',
      'page',
      'sentences',
    ],
    segments.map((s) => [
      documentId,
      s.index,
      s.sectionIndex,
      s.type,
      s.start,
      s.end,
      s.page,
      JSON.stringify(s.sentences.map((x) => [x.start, x.end])),
    ]),
  );
}

export async function loadSegments(db: SqlExecutor, documentId: number): Promise<Segment[] | undefined> {
  const rows = await db.query<Record<string, any>>(
    'SELECT * FROM document_segments WHERE document_id = ? ORDER BY segment_index',
    [documentId],
  );
  if (rows.length === 0) return undefined;
  return rows.map((r) => ({
    index: Number(r.segment_index),
    sectionIndex: Number(r.section_index),
    type: r.type,
    start: Number(r.start_offset),
    end: Number(r.end_offset),
    page: Number(r.page),
    sentences: parseJsonColumn<Array<[number, number]>>(r.sentences, []).map(([start, end]) => ({
      start,
      end,
    })),
  })) as Segment[];
}
