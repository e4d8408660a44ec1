import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { fieldPathOf, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import type { Algorithm } from './algorithm.js';

/**
 * Options of `fixedWindow`: at most `limit` units per `window`, windows aligned to
 * `floor(now / window)`; one counter per key.
 *
 * @example
 * ```ts
 * fixedWindow({ limit: 100, window: '1m' }); // 100 requests per calendar minute
 * ```
 */
export interface FixedWindowOptions {
  /** Units admitted per window. */
  limit: number;
  /** Window length; windows are aligned to multiples of it since the epoch. */
  window: Duration;
  /** Name used in headers. @default `fixed-<limit>-per-<window>` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** Every option name of FixedWindowOptions, checked against the type. */
const FIXED_WINDOW_OPTION_NAMES = optionNames<FixedWindowOptions>({
  limit: true,
  window: true,
  name: true,
  blockDuration: true,
});

/**
 * At most `limit` units per window, windows aligned to `floor(now / window)`. One counter per
 * key. A client can get up to 2× limit across a window edge; use slidingLog for exactness.
 */
export function fixedWindow(options: FixedWindowOptions): Policy {
  // An adapter's shorthand (Nest's `@RateLimit({ limit, window })`) names its own fields.
  const where = fieldPathOf(options, 'fixedWindow');
  const o = readOptions(options, where, FIXED_WINDOW_OPTION_NAMES);
  const limit = positiveInteger(o.limit, `${where}.limit`);
  const windowUs = parseDuration(o.window, `${where}.window`);
  return definePolicy({
    kind: 'fixed-window',
    tag: 'fw',
    name: o.name,
    nameField: `${where}.name`,
    defaultName: `fixed-${rateName(limit, windowUs)}`,
    limit,
    windowUs,
    capacity: limit,
    options: { limit, window: windowUs / 1000 },
    params: [
      limit,
      windowUs,
      packsIntoOneInteger(limit, windowUs) ? 1 : 0,
    ] satisfies FixedWindowParams,
    blockDuration: o.blockDuration,
  });
}

const TWO_POW_53 = 2n ** 53n;

/**
 * Whether Redis can keep this policy's window index and count as one exact integer,
 * index · (limit + 1) + used, for every time a clock can give (below 2^53 µs): then the state
 * is one integer at the base key (72 bytes for a short key) instead of a count at a key named
 * after the window (88). True about whenever limit < window in µs.
 */
export function packsIntoOneInteger(limit: number, windowUs: number): boolean {
  const windows = BigInt(Math.floor(Number.MAX_SAFE_INTEGER / windowUs)) + 1n;
  return windows * BigInt(limit + 1) <= TWO_POW_53;
}

/**
 * The count of one window. In the packed layout (`params[2]` = 1) it is the same integer Redis
 * keeps, index · (limit + 1) + used: no object per write. Otherwise `{ index, used }`.
 */
type FixedWindowState = number | { index: number; used: number };

/** The ARGV lua/fixed-window.lua reads after the algorithm name (µs for times). */
export type FixedWindowParams = readonly [limit: number, window: number, packed: number];

/** Twin of lua/fixed-window.lua. */
export const fixedWindowAlgorithm: Algorithm<FixedWindowState, FixedWindowParams> = {
  kind: 'fixed-window',
  check(state, now, cost, [limit, window, packed]) {
    const index = Math.floor(now / window);
    let used = 0;
    let base = 0;
    if (packed === 1) {
      base = index * (limit + 1);
      if (typeof state === 'number' && state >= base && state - base <= limit) used = state - base;
    } else if (typeof state === 'object' && state.index === index) {
      used = state.used;
    }
    const windowLeft = (index + 1) * window - now;
    if (used + cost <= limit) {
      const after = used + cost;
      return {
        allowed: true,
        remaining: limit - after,
        resetAfter: after > 0 ? windowLeft : 0,
        retryAfter: 0,
        delay: 0,
        next: packed === 1 ? base + after : { index, used: after },
        ttl: windowLeft,
      };
    }
    return {
      allowed: false,
      remaining: limit - used,
      resetAfter: used > 0 ? windowLeft : 0,
      retryAfter: cost > limit ? -1 : windowLeft,
      delay: 0,
    };
  },
  refund(state, now, cost, [limit, window, packed]) {
    // The current window's count only; its TTL stays the window's end (Lua: DECRBY).
    const index = Math.floor(now / window);
    const windowLeft = (index + 1) * window - now;
    if (packed === 1) {
      const base = index * (limit + 1);
      if (typeof state !== 'number' || state < base || state - base > limit) return undefined;
      const used = state - base;
      if (used === 0) return undefined;
      return { next: state - Math.min(cost, used), ttl: windowLeft };
    }
    if (typeof state !== 'object' || state.index !== index || state.used === 0) return undefined;
    return { next: { index, used: state.used - Math.min(cost, state.used) }, ttl: windowLeft };
  },
  unpack(reply, cost, [limit]) {
    // (window_left - 1) · (limit + 1) + count, negated minus 1 when denied (lua/fixed-window.lua).
    const allowed = reply >= 0;
    const x = allowed ? reply : -reply - 1;
    const count = x % (limit + 1);
    const windowLeft = (x - count) / (limit + 1) + 1;
    return {
      allowed,
      remaining: limit - count,
      resetAfter: count > 0 ? windowLeft : 0,
      retryAfter: allowed ? 0 : cost > limit ? -1 : windowLeft,
      delay: 0,
    };
  },
};
