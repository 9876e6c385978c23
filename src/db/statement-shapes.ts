/**
 * Lists of values in SQL text (`IN (?, ?, ?)`, multi-row `VALUES (...), (...)`) with few distinct shapes.
 *
 * A statement's text is the key of SQLite's prepared statements (the executor caches them by text): an IN list or
 * a VALUES list as long as a document's chunk count made a new text for nearly every document, and preparing a
 * 40-row INSERT of chunks costs SQLite ~0.5 ms of parsing. Lists here are cut and padded to powers of two, so a
 * table sees a handful of texts in a whole run: ~60 ms less parsing on the main thread per pass over the shared
 * corpus (53 documents), where every document's chunk count differs.
 */
import type { Dialect } from './sql.js';

/** Values in one IN list at most: well below SQLite's 32,766 parameters, with room for a statement's others. */
export const IN_LIST_MAX = 256;

/** `?, ?, ?`: `n` placeholders. */
export function marks(n: number): string {
  return n <= 0 ? '' : '?, '.repeat(n - 1) + '?';
}

const powerOfTwoAtLeast = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(1, n)));

/**
 * One IN list for `values` (1 to IN_LIST_MAX of them): the placeholders and the values, padded with the last value
 * to a power of two. Repeating a value changes neither what IN matches nor how many rows a statement changes.
 */
export function inList<T>(values: readonly T[]): { marks: string; values: T[] } {
  if (values.length === 0 || values.length > IN_LIST_MAX)
    throw new RangeError(`an IN list holds 1 to ${IN_LIST_MAX} values, not ${values.length}`);
  const padded = [...values];
  const size = powerOfTwoAtLeast(values.length);
  while (padded.length < size) padded.push(values[values.length - 1]!);
  return { marks: marks(size), values: padded };
}

/** `values` as IN lists (inList) of at most `max` values each; none for no values. */
export function inLists<T>(
  values: readonly T[],
  max: number = IN_LIST_MAX,
): Array<{ marks: string; values: T[] }> {
  const size = Math.max(1, Math.min(max, IN_LIST_MAX));
  const lists: Array<{ marks: string; values: T[] }> = [];
  for (let start = 0; start < values.length; start += size)
    lists.push(inList(values.slice(start, start + size)));
  return lists;
}

/** Below this many rows a multi-row statement is not cut further: a statement of its own costs more than the few texts. */
const SMALL_SLICE = 16;

/**
 * `rows` in slices for multi-row statements, at most `max` rows each, in order. On SQLite a slice of SMALL_SLICE
 * rows or more is a power of two (37 rows: 32, then 5), so the statement texts repeat: one more statement costs
 * SQLite ~30 µs, preparing a new 40-row text ~0.5 ms; fewer rows (most documents' chunks) stay one statement, whose
 * 15 texts are soon all prepared. On MariaDB, where each statement is a round trip and texts are not prepared,
 * slices are as large as allowed.
 */
export function rowSlices<T>(dialect: Dialect, rows: readonly T[], max: number): T[][] {
  const slices: T[][] = [];
  const limit = Math.max(1, Math.floor(max));
  let start = 0;
  while (start < rows.length) {
    const left = Math.min(limit, rows.length - start);
    const size = dialect === 'sqlite' && left >= SMALL_SLICE ? 2 ** Math.floor(Math.log2(left)) : left;
    slices.push(rows.slice(start, start + size));
    start += size;
  }
  return slices;
}
