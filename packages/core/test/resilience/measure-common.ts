/**
 * The open-loop load and the row format shared by the reliability measurements
 * (measure-reliability.ts, measure-leases.ts). Not a test: timings are never asserted.
 */
import type { Decision } from '../../src/index.js';

export const INTERVAL_MS = 5;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface Sample {
  at: number;
  latency: number;
  reason: string | undefined;
  allowed: boolean;
}

/** What one call answered: a RateLimiter or ConcurrencyLimiter decision. */
export type Answer = Pick<Decision, 'reason' | 'allowed'>;

/**
 * Fires a call every INTERVAL_MS until stopped (never waiting for the previous one); records
 * when each was asked and answered. `decide` is a limiter's `consume`, or an `acquire` that
 * releases its lease a little later.
 */
export function load(decide: (key: string) => Promise<Answer>, keyOf: (i: number) => string) {
  const samples: Sample[] = [];
  const pending: Promise<void>[] = [];
  let stopped = false;
  let i = 0;
  const timer = setInterval(() => {
    if (stopped) return;
    const at = performance.now();
    const key = keyOf(i++);
    pending.push(
      decide(key).then((d) => {
        samples.push({ at, latency: performance.now() - at, reason: d.reason, allowed: d.allowed });
      }),
    );
  }, INTERVAL_MS);
  return {
    samples,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await Promise.all(pending);
      return samples;
    },
  };
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const ms = (v: number) => (Number.isNaN(v) ? '–' : `${v.toFixed(1)} ms`);

export function summarise(samples: Sample[], from: number, to: number) {
  const window = samples.filter((s) => s.at >= from && s.at < to);
  const reasons: Record<string, number> = {};
  for (const s of window) reasons[s.reason ?? 'store'] = (reasons[s.reason ?? 'store'] ?? 0) + 1;
  const latencies = window.map((s) => s.latency);
  return {
    asked: window.length,
    reasons,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.length ? Math.max(...latencies) : Number.NaN,
  };
}

/**
 * Time from `since` until the store itself answered again: the first store answer to a call
 * asked after `since` and after the first failure-policy answer (calls asked just before the
 * server died can still be answered by it).
 */
export function recovery(samples: Sample[], since: number): number {
  const byTime = [...samples].sort((a, b) => a.at - b.at);
  const firstFailure = byTime.find((s) => s.at >= since && s.reason !== undefined)?.at ?? since;
  const first = byTime.find((s) => s.at >= since && s.at > firstFailure && s.reason === undefined);
  return first ? first.at + first.latency - since : Number.NaN;
}

export const rows: string[] = [];
export function row(scenario: string, outage: ReturnType<typeof summarise>, recoveredIn: number) {
  const reasons = Object.entries(outage.reasons)
    .map(([r, n]) => `${r} ${n}`)
    .join(', ');
  rows.push(
    `| ${scenario} | ${outage.asked} | ${reasons} | ${ms(outage.p50)} / ${ms(outage.p99)} / ${ms(outage.max)} | ${ms(recoveredIn)} |`,
  );
  process.stderr.write(`${rows.at(-1)}\n`);
}
