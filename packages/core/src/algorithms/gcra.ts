// gcra: the policy factory, its parameters and the TypeScript twin of lua/gcra.lua.
import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import type { Algorithm } from './algorithm.js';

/**
 * Options of `gcra`: token-bucket behaviour (`burst` back to back, then `limit` per `window`)
 * kept in one timestamp per key.
 *
 * @example
 * ```ts
 * gcra({ limit: 10, window: '1s', burst: 20 }); // 10/s sustained, bursts of 20
 * ```
 */
export interface GcraOptions {
  /** Requests per window (the emission interval is window / limit); 0 admits nothing. */
  limit: number;
  window: Duration;
  /** Back-to-back requests an idle key admits. @default limit */
  burst?: number;
  /** @default `gcra-<limit>-per-<window>[-burst-<burst>]` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** The most a whole-µs emission interval may slow the configured rate (1 %). */
const MAX_RATE_ROUNDING = 1.01;

/** The longest allowance (burst × interval) accepted: 100 years keeps TAT far below 2^53 µs. */
const MAX_TOLERANCE_US = 100 * 365 * 86_400_000_000;

/** Every option name of GcraOptions, checked against the type. */
const GCRA_OPTION_NAMES = optionNames<GcraOptions>({
  limit: true,
  window: true,
  burst: true,
  name: true,
  blockDuration: true,
});

/**
 * Generic Cell Rate Algorithm: token-bucket behaviour stored as one timestamp (the theoretical
 * arrival time). The emission interval is window/limit rounded up to a whole microsecond, so
 * it never admits faster than configured (a limit whose rounding would slow the rate by more
 * than 1 % is refused); the capacity is exactly `burst`.
 */
export function gcra(options: GcraOptions): Policy {
  const o = readOptions(options, 'gcra', GCRA_OPTION_NAMES);
  const limit = positiveInteger(o.limit, 'gcra.limit', 0);
  const windowUs = parseDuration(o.window, 'gcra.window');
  // limit 0 admits nothing whatever the burst (docs/algorithms.md#limit-0); the burst is still read.
  const burst =
    o.burst === undefined ? limit : positiveInteger(o.burst, 'gcra.burst', limit === 0 ? 0 : 1);
  // limit 0: an allowance of 0 intervals (burst 0); any interval will do, the window keeps ids apart.
  const interval = limit === 0 ? windowUs : Math.ceil(windowUs / limit);
  // Rounding the interval up to a whole µs slows the rate; past 1 % that is no longer the rate
  // asked for (limit 1e7 per 1s would enforce 1e6/s), so it is refused, not silently cut.
  if (interval * limit > windowUs * MAX_RATE_ROUNDING) {
    throw configError(
      'gcra.limit',
      limit,
      `a limit whose emission interval (window / limit) is a whole number of microseconds within 1 %: ${windowUs} µs / ${limit} rounds up to ${interval} µs, ${Math.round(((interval * limit) / windowUs - 1) * 100)} % slower than asked. Any limit up to ${Math.floor(windowUs / 100)} per this window works; or use tokenBucket (exact at any rate)`,
    );
  }
  if (limit > 0 && burst * interval > MAX_TOLERANCE_US) {
    throw configError(
      'gcra.burst',
      burst,
      'small enough that burst × (window / limit) is at most 100 years',
    );
  }
  return definePolicy({
    kind: 'gcra',
    tag: 'gc',
    name: o.name,
    nameField: 'gcra.name',
    defaultName: `gcra-${rateName(limit, windowUs)}${burst === limit ? '' : `-burst-${burst}`}`,
    limit,
    windowUs,
    capacity: limit === 0 ? 0 : burst,
    options: { limit, window: windowUs / 1000, burst },
    params: [interval, limit === 0 ? 0 : burst] satisfies GcraParams,
    blockDuration: o.blockDuration,
  });
}

/** The ARGV lua/gcra.lua reads after the algorithm name (µs for times). */
export type GcraParams = readonly [interval: number, burst: number];

/** Twin of lua/gcra.lua. State: the theoretical arrival time (µs). */
export const gcraAlgorithm: Algorithm<number, GcraParams> = {
  kind: 'gcra',
  leasable: true,
  check(state, now, cost, [interval, burst], _slack, force) {
    const tolerance = burst * interval;
    const tat = Math.max(state ?? 0, now);
    const newTat = tat + cost * interval;
    // A charge pushes TAT past the allowance: debt, repaid as time passes.
    if ((cost <= burst && newTat - now <= tolerance) || force === true) {
      return {
        allowed: true,
        remaining: Math.floor((tolerance - (newTat - now)) / interval),
        resetAfter: newTat - now,
        retryAfter: 0,
        delay: 0,
        next: newTat,
        ttl: newTat - now,
      };
    }
    return {
      allowed: false,
      remaining: Math.floor(Math.max(0, tolerance - (tat - now)) / interval),
      resetAfter: tat - now,
      retryAfter: cost > burst ? -1 : newTat - now - tolerance,
      delay: 0,
    };
  },
  refund(tat, now, cost, [interval]) {
    if (tat === undefined || tat <= now) return undefined;
    if (cost >= Math.ceil((tat - now) / interval)) return 'delete';
    const next = tat - cost * interval;
    return { next, ttl: next - now };
  },
  unpack(reply, cost, [interval, burst]) {
    // reset_after when allowed, -reset_after - 1 when denied (the packed reply of lua/gcra.lua's check).
    const allowed = reply >= 0;
    const resetAfter = allowed ? reply : -reply - 1;
    const tolerance = burst * interval;
    return {
      allowed,
      remaining: Math.floor(Math.max(0, tolerance - resetAfter) / interval),
      resetAfter,
      retryAfter: allowed ? 0 : cost > burst ? -1 : resetAfter + cost * interval - tolerance,
      delay: 0,
    };
  },
};
