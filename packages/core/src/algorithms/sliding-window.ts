// slidingWindow: the policy factory, its parameters and the TypeScript twin of lua/sliding-window.lua.
import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import type { Algorithm } from './algorithm.js';

/**
 * Options of `slidingWindow`: the sum of the last `buckets` sub-windows (the current one
 * included) stays within `limit`; bounded overshoot at edges, fixed memory per key.
 *
 * @example
 * ```ts
 * slidingWindow({ limit: 1000, window: '1h', buckets: 60 }); // minute buckets
 * ```
 */
export interface SlidingWindowOptions {
  /** Units admitted per window (counted over the last `buckets` sub-windows). */
  limit: number;
  window: Duration;
  /**
   * Sub-windows per window (Sentinel's `sampleCount`): more buckets, more precision, a longer
   * state string. The window must split into whole microseconds. @default 10
   */
  buckets?: number;
  /** @default `sliding-window-<limit>-per-<window>[-buckets-<buckets>]` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** @default 10 sub-windows per window */
export const DEFAULT_SLIDING_WINDOW_BUCKETS = 10;
/** The most sub-windows per window: the state (one count each) stays a short string. */
export const MAX_SLIDING_WINDOW_BUCKETS = 1000;

/** Every option name of SlidingWindowOptions, checked against the type. */
const SLIDING_WINDOW_OPTION_NAMES = optionNames<SlidingWindowOptions>({
  limit: true,
  window: true,
  buckets: true,
  name: true,
  blockDuration: true,
});

/**
 * Sentinel's LeapArray: the window is cut into `buckets` sub-windows aligned to
 * `floor(now / (window / buckets))`; a request of cost c is admitted when the last `buckets`
 * sub-windows (the current one included) hold at most limit − c units. Any interval of length
 * window − window/buckets admits at most `limit`; an interval of length `window` can also hold
 * what the oldest sub-window, partly slid out, admitted (at most `limit` more, about
 * limit/buckets more for evenly spread traffic). O(buckets) state per key.
 */
export function slidingWindow(options: SlidingWindowOptions): Policy {
  const o = readOptions(options, 'slidingWindow', SLIDING_WINDOW_OPTION_NAMES);
  // 0 admits nothing: a maintenance switch (docs/algorithms.md#limit-0).
  const limit = positiveInteger(o.limit, 'slidingWindow.limit', 0);
  const windowUs = parseDuration(o.window, 'slidingWindow.window');
  const buckets =
    o.buckets === undefined
      ? DEFAULT_SLIDING_WINDOW_BUCKETS
      : positiveInteger(o.buckets, 'slidingWindow.buckets');
  if (buckets > MAX_SLIDING_WINDOW_BUCKETS || windowUs % buckets !== 0) {
    throw configError(
      'slidingWindow.buckets',
      buckets,
      `an integer from 1 to ${MAX_SLIDING_WINDOW_BUCKETS} that divides the window (${windowUs} µs) into whole microseconds`,
    );
  }
  const size = windowUs / buckets;
  return definePolicy({
    kind: 'sliding-window',
    tag: 'sw',
    name: o.name,
    nameField: 'slidingWindow.name',
    defaultName: `sliding-window-${rateName(limit, windowUs)}${buckets === DEFAULT_SLIDING_WINDOW_BUCKETS ? '' : `-buckets-${buckets}`}`,
    limit,
    windowUs,
    capacity: limit,
    options: { limit, window: windowUs / 1000, buckets },
    params: [limit, size, buckets] satisfies SlidingWindowParams,
    blockDuration: o.blockDuration,
  });
}

interface SlidingWindowState {
  /** The newest sub-window written (floor(time / size)). */
  index: number;
  /** Its count, then the counts of the sub-windows before it, newest first. */
  counts: readonly number[];
}

/** The ARGV lua/sliding-window.lua reads after the algorithm name (µs for times). */
export type SlidingWindowParams = readonly [limit: number, size: number, buckets: number];

/** Twin of lua/sliding-window.lua. */
export const slidingWindowAlgorithm: Algorithm<SlidingWindowState, SlidingWindowParams> = {
  kind: 'sliding-window',
  leasable: true,
  check(state, now, cost, [limit, size, buckets], _slack, force) {
    let current = Math.floor(now / size);
    // counts[i] is sub-window current − i (0-based; missing is 0); only i < buckets counts.
    const counts: number[] = new Array(buckets).fill(0);
    let used = 0;
    if (state !== undefined) {
      // A clock that stepped back leaves the stored sub-window ahead: count from there.
      if (state.index > current) current = state.index;
      const shift = current - state.index;
      for (let j = 0; j < state.counts.length && shift + j < buckets; j++) {
        const count = state.counts[j] ?? 0;
        counts[shift + j] = count;
        used += count;
      }
    }
    // The count in position i leaves the window when sub-window current − i + buckets starts.
    const leaves = (i: number): number => (current - i + buckets) * size - now;
    const newest = counts.findIndex((c) => c > 0);
    // A charge counts past the limit: debt, repaid as its sub-windows slide out.
    if (used + cost <= limit || force === true) {
      const after = used + cost;
      const last = cost > 0 ? 0 : newest;
      const result = {
        allowed: true,
        remaining: limit - after,
        resetAfter: last >= 0 ? leaves(last) : 0,
        retryAfter: 0,
        delay: 0,
      };
      if (cost === 0) return result;
      counts[0] = (counts[0] ?? 0) + cost;
      let end = buckets;
      while (counts[end - 1] === 0) end--;
      return {
        ...result,
        next: { index: current, counts: counts.slice(0, end) },
        ttl: result.resetAfter,
      };
    }
    const resetAfter = newest >= 0 ? leaves(newest) : 0;
    // In debt (used > limit) nothing is left.
    const remaining = used < limit ? limit - used : 0;
    if (cost > limit) {
      return { allowed: false, remaining, resetAfter, retryAfter: -1, delay: 0 };
    }
    // Oldest first, free counts until used + cost − freed <= limit.
    const need = used + cost - limit;
    let freed = 0;
    let retryAfter = 0;
    for (let i = buckets - 1; i >= 0; i--) {
      freed += counts[i] ?? 0;
      if (freed >= need) {
        retryAfter = leaves(i);
        break;
      }
    }
    return { allowed: false, remaining, resetAfter, retryAfter, delay: 0 };
  },
  refund(state, now, cost, [, size, buckets]) {
    // The current sub-window's count only: the stored newest one, when it is current.
    if (state === undefined || state.index < Math.floor(now / size)) return undefined;
    const current = state.counts[0] ?? 0;
    if (current === 0) return undefined;
    const counts = [current - Math.min(cost, current), ...state.counts.slice(1)];
    const newest = counts.findIndex((c) => c > 0);
    if (newest < 0) return 'delete';
    let end = counts.length;
    while (counts[end - 1] === 0) end--;
    return {
      next: { index: state.index, counts: counts.slice(0, end) },
      ttl: (state.index - newest + buckets) * size - now,
    };
  },
};
