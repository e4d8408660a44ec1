/** How the bench's Markdown tables print numbers, times and ratios (report.ts, report-cluster.ts). */

/** A figure: grouped digits from 100, else 1 or 2 decimals; `n/a` when not measured. */
export const fmt = (n: number) =>
  !Number.isFinite(n)
    ? 'n/a'
    : n >= 100
      ? Math.round(n).toLocaleString('en-US')
      : n.toFixed(n >= 10 ? 1 : 2);

/** Milliseconds with 1 or 2 decimals. */
export const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(n >= 10 ? 1 : 2)} ms` : 'n/a');

/** a ÷ b as `1.23×`. */
export const ratio = (a: number, b: number) =>
  b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}×` : 'n/a';
