/** JSON columns come back as strings (SQLite, MariaDB) or parsed (MySQL 8): accept both. */
export function parseJsonColumn<T>(value: unknown, fallback: T): T {
  if (value === null || value === undefined || value === '') return fallback;
  if (typeof value !== 'string') return value as T;
  return JSON.parse(value) as T;
}

export function toJsonColumn(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}
