/** Timestamps are stored as UTC 'YYYY-MM-DD HH:MM:SS.mmm' on both backends: readable, sortable, comparable. */
export function sqlTime(date: Date | number = Date.now()): string {
  const ms = typeof date === 'number' ? date : date.getTime();
  // a busy process asks for the same millisecond many times in a row: format it once
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
    lastMs = ms;
  }
  return lastText;
}
let lastMs = Number.NaN;
let lastText = '';

/** Parses a stored timestamp (string from either driver, or a Date) as UTC. */
export function parseSqlTime(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  const text = String(value);
  return new Date(text.includes('T') ? text : `${text.replace(' ', 'T')}Z`);
}
