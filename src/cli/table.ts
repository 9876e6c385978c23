/** East Asian wide and fullwidth characters: two columns in a terminal. */
const WIDE =
  /[\u1100-\u115F\u2E80-\u303E\u3041-\u33FF\u3400-\u4DBF\u4E00-\u9FFF\uA000-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]|[\u{1F300}-\u{1FAFF}\u{20000}-\u{3FFFD}]/u;
/** Combining marks and other characters that take no column of their own. */
const ZERO_WIDTH = /[\p{Mn}\p{Me}\u200B-\u200F]/u; // variation selectors are Mn

/** Columns a text takes in a terminal: per character, wide ones two, combining ones none. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const char of text) width += ZERO_WIDTH.test(char) ? 0 : WIDE.test(char) ? 2 : 1;
  return width;
}

/** A plain text table: columns padded to their widest cell (as a terminal shows it, "研修" or an NFD "ü"). */
export function formatTable(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '' : String(c))));
  const widths = headers.map((h, i) =>
    Math.max(displayWidth(h), ...cells.map((r) => displayWidth(r[i] ?? ''))),
  );
  const line = (r: string[]) =>
    r
      .map((c, i) => c + ' '.repeat(Math.max(0, widths[i]! - displayWidth(c))))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

export const printJson = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
