/** Strings in a fixed order, by UTF-16 code unit (no locale: localeCompare's first call loads ICU's collator). */
export const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
