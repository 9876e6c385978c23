/** A plain text table: columns padded to their widest cell. */
export function formatTable(headers: string[], rows: unknown[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

export const printJson = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
