/**
 * Closed-loop load: `inFlight` workers each await one operation after another over a fixed set
 * of keys, for a fixed time. Reports operations/s and latency percentiles.
 */

export type Operation = (key: string) => Promise<unknown>;

export interface Sample {
  readonly opsPerSec: number;
  readonly p50: number;
  readonly p99: number;
  readonly errors: number;
}

/** Bench timings scale with BENCH_SCALE (e.g. 0.3 for a quick look, 2 for steadier figures). */
export const SCALE = Number(process.env.BENCH_SCALE ?? 1) || 1;

export function keySet(count: number, prefix = 'user'): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}:${i}`);
}

const MAX_SAMPLES = 1 << 21;
const latencies = new Float64Array(MAX_SAMPLES);

/**
 * Runs `op` with `inFlight` concurrent callers: `warmupMs` unrecorded, then `durationMs`. The
 * phases are read from the clock inside the loop, not from timers: an operation answered from
 * a local cache resolves in a microtask and would starve any timer.
 */
export async function closedLoop(
  op: Operation,
  keys: readonly string[],
  inFlight: number,
  durationMs: number,
  warmupMs: number,
  /** Called once when the measured phase starts (e.g. to read CPU counters). */
  onMeasureStart?: () => void,
): Promise<Sample> {
  let next = 0;
  let count = 0;
  let errors = 0;
  const measureFrom = performance.now() + warmupMs;
  const end = measureFrom + durationMs;
  let measuring = false;
  const worker = async () => {
    for (;;) {
      const started = performance.now();
      if (started >= end) return;
      if (!measuring && started >= measureFrom) {
        measuring = true;
        onMeasureStart?.();
      }
      const key = keys[next++ % keys.length]!;
      try {
        await op(key);
      } catch {
        errors++;
      }
      if (started >= measureFrom) {
        if (count < MAX_SAMPLES) latencies[count] = performance.now() - started;
        count++;
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const measured = count;
  const sorted = latencies.slice(0, Math.min(measured, MAX_SAMPLES)).sort();
  return {
    opsPerSec: (measured / durationMs) * 1000,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    errors,
  };
}

/** Back-to-back awaited calls on one caller, for in-process stores (no network to overlap). */
export async function tightLoop(
  op: Operation,
  keys: readonly string[],
  durationMs: number,
  warmupMs: number,
): Promise<number> {
  const run = async (ms: number) => {
    let i = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < ms) {
      // Check the clock every 1024 calls so reading it does not dominate.
      for (let j = 0; j < 1024; j++) await op(keys[i++ % keys.length]!);
      t = performance.now();
    }
    return (i / (t - t0)) * 1000;
  };
  await run(warmupMs);
  return run(durationMs);
}

export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `items` rotated left by `by`: repetition r starts with a different subject. */
export function rotate<T>(items: readonly T[], by: number): T[] {
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}
