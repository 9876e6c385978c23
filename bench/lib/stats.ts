/**
 * Small helpers every bench shares: medians, interleaved rounds (cpe, peer, cpe, peer, ...) so that machine
 * noise hits all contenders alike, and number formatting for the Markdown tables.
 */

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export interface Contender<R> {
  name: string;
  run: (round: number) => Promise<R>;
}

/**
 * Runs every contender once per round, in the same order each round, after `warmup` untimed rounds; returns each
 * contender's results in round order.
 */
export async function interleave<R>(
  contenders: ReadonlyArray<Contender<R>>,
  rounds: number,
  options: { warmup?: number; onResult?: (name: string, round: number, result: R) => void } = {},
): Promise<Map<string, R[]>> {
  const results = new Map<string, R[]>(contenders.map((c) => [c.name, []]));
  for (let w = 0; w < (options.warmup ?? 0); w++) for (const c of contenders) await c.run(-1 - w);
  for (let round = 0; round < rounds; round++) {
    for (const c of contenders) {
      const result = await c.run(round);
      results.get(c.name)!.push(result);
      options.onResult?.(c.name, round, result);
    }
  }
  return results;
}

export const MB = 1024 * 1024;

/** 1234.5 -> "1,235"; 12.345 -> "12.3"; 0.1234 -> "0.12" */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

/** cpe / peer as "2.3x" */
export const ratio = (cpe: number, peer: number) =>
  peer > 0 && Number.isFinite(cpe / peer) ? `${fmt(cpe / peer)}x` : 'n/a';

export const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : 'n/a');

/** A Markdown table from a header and rows of cells. */
export function table(
  header: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<string | number>>,
): string {
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

/** env number with a default; BENCH_QUICK=1 picks the quick default */
export function envNumber(name: string, full: number, quick: number): number {
  const raw = process.env[name];
  if (raw !== undefined && raw !== '') {
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}=${raw} is not a positive number`);
    return n;
  }
  return isQuick() ? quick : full;
}

export const isQuick = () => process.env.BENCH_QUICK === '1' || process.env.BENCH_QUICK === 'true';
