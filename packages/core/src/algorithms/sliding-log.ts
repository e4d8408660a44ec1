// slidingLog: the policy factory, its parameters and the TypeScript twin of lua/sliding-log.lua.
import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import type { Algorithm } from './algorithm.js';

/**
 * Options of `slidingLog`: exact, at most `limit` units in any `(now − window, now]`; one entry
 * per admitted unit, so `limit` is capped (use `slidingWindow` for large limits).
 *
 * @example
 * ```ts
 * slidingLog({ limit: 5, window: '1h' }); // never a 6th within any hour
 * ```
 */
export interface SlidingLogOptions {
  /** Units admitted in any interval of length `window`. */
  limit: number;
  window: Duration;
  /** @default `sliding-log-<limit>-per-<window>` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** Every option name of SlidingLogOptions, checked against the type. */
const SLIDING_LOG_OPTION_NAMES = optionNames<SlidingLogOptions>({
  limit: true,
  window: true,
  name: true,
  blockDuration: true,
});

/**
 * The largest slidingLog `limit`. A decision's work (Redis ZADD of every admitted unit, the
 * twin's copy of the log) grows with the limit: at this bound the costliest decision, cost =
 * limit on a full log, stays within a few milliseconds of Redis time (docs/reliability.md).
 * A cost above the limit is denied with retryAfter −1 before anything is written.
 */
export const MAX_SLIDING_LOG_LIMIT = 1_000;

/**
 * Exact: at most `limit` units in any interval (now − window, now]. Keeps one entry per
 * admitted unit, so memory per key grows with `limit`.
 */
export function slidingLog(options: SlidingLogOptions): Policy {
  const o = readOptions(options, 'slidingLog', SLIDING_LOG_OPTION_NAMES);
  // 0 admits nothing: a maintenance switch (docs/algorithms.md#limit-0).
  const limit = positiveInteger(o.limit, 'slidingLog.limit', 0);
  if (limit > MAX_SLIDING_LOG_LIMIT) {
    throw configError(
      'slidingLog.limit',
      limit,
      `at most ${MAX_SLIDING_LOG_LIMIT}: slidingLog stores one entry per admitted unit, and one decision writes up to \`limit\` of them inside Redis. For larger limits use slidingWindow (the same window, O(buckets) state), gcra or tokenBucket`,
    );
  }
  const windowUs = parseDuration(o.window, 'slidingLog.window');
  return definePolicy({
    kind: 'sliding-log',
    tag: 'sl',
    name: o.name,
    nameField: 'slidingLog.name',
    defaultName: `sliding-log-${rateName(limit, windowUs)}`,
    limit,
    windowUs,
    capacity: limit,
    options: { limit, window: windowUs / 1000 },
    params: [limit, windowUs] satisfies SlidingLogParams,
    blockDuration: o.blockDuration,
  });
}

/** Admission times (µs) of every unit still in the window, oldest first. */
type SlidingLogState = readonly number[];

/** The ARGV lua/sliding-log.lua reads after the algorithm name (µs for times). */
export type SlidingLogParams = readonly [limit: number, window: number];

/** Twin of lua/sliding-log.lua. */
export const slidingLogAlgorithm: Algorithm<SlidingLogState, SlidingLogParams> = {
  kind: 'sliding-log',
  // A sorted set (lua/sliding-log.lua: `--- @own-key`).
  sharesKey: () => false,
  check(state, now, cost, [limit, window]) {
    const floor = now - window;
    // Units at or before `floor` have left the window (it is open on the left).
    let first = 0;
    const log = state ?? [];
    while (first < log.length && (log[first] ?? now) <= floor) first++;
    const used = log.length - first;
    // The newest unit decides when the key is empty again (the unit about to be added is at now).
    const newest = used > 0 ? (log[log.length - 1] ?? now) : now;
    if (used + cost <= limit) {
      const after = used + cost;
      const last = cost > 0 ? Math.max(newest, now) : newest;
      const result = {
        allowed: true,
        remaining: limit - after,
        resetAfter: after > 0 ? last + window - now : 0,
        retryAfter: 0,
        delay: 0,
      };
      if (cost === 0) return result;
      const next = log.slice(first);
      const outOfOrder = (next[next.length - 1] ?? now) > now;
      for (let i = 0; i < cost; i++) next.push(now);
      // Only a clock that stepped back can put `now` before a logged unit.
      if (outOfOrder) next.sort((a, b) => a - b);
      return { ...result, next, ttl: result.resetAfter };
    }
    const resetAfter = used > 0 ? newest + window - now : 0;
    if (cost > limit)
      return { allowed: false, remaining: limit - used, resetAfter, retryAfter: -1, delay: 0 };
    // The (used + cost − limit)-th oldest unit in the window must leave first (it exists:
    // used + cost > limit and cost <= limit).
    const oldest = log[first + used + cost - limit - 1] ?? now;
    return {
      allowed: false,
      remaining: limit - used,
      resetAfter,
      retryAfter: oldest + window - now,
      delay: 0,
    };
  },
  refund(log, now, cost, [, window]) {
    if (log === undefined) return undefined;
    const floor = now - window;
    let first = 0;
    while (first < log.length && (log[first] ?? now) <= floor) first++;
    const used = log.length - first;
    if (used === 0) return undefined;
    if (cost >= used) return 'delete';
    // The newest units leave; older ones that left the window stay until the TTL drops them.
    const next = log.slice(0, log.length - cost);
    return { next, ttl: (next[next.length - 1] ?? now) + window - now };
  },
};
