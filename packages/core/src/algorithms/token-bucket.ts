// tokenBucket: the policy factory, its parameters and the TypeScript twin of lua/token-bucket.lua.
import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import { type Algorithm, gcd, refilled } from './algorithm.js';

/**
 * Options of `tokenBucket`: holds up to `burst` tokens (default `limit`), refilled
 * continuously at `limit` per `window`; starts full.
 *
 * @example
 * ```ts
 * tokenBucket({ limit: 10, window: '1s', burst: 50 }); // bursts of 50, 10/s sustained
 * ```
 */
export interface TokenBucketOptions {
  /** Tokens added per window (the sustained rate is limit / window); 0 admits nothing. */
  limit: number;
  window: Duration;
  /** Bucket capacity: the largest burst. @default limit */
  burst?: number;
  /** @default `token-bucket-<limit>-per-<window>[-burst-<burst>]` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** Every option name of TokenBucketOptions, checked against the type. */
const TOKEN_BUCKET_OPTION_NAMES = optionNames<TokenBucketOptions>({
  limit: true,
  window: true,
  burst: true,
  name: true,
  blockDuration: true,
});

/**
 * A bucket of `burst` tokens (full at first) refilled continuously at limit/window; a request
 * of cost c takes c tokens or is denied. Allows bursts of `burst`, then the sustained rate.
 */
export function tokenBucket(options: TokenBucketOptions): Policy {
  const o = readOptions(options, 'tokenBucket', TOKEN_BUCKET_OPTION_NAMES);
  const limit = positiveInteger(o.limit, 'tokenBucket.limit', 0);
  const windowUs = parseDuration(o.window, 'tokenBucket.window');
  // limit 0 admits nothing whatever the burst (docs/algorithms.md#limit-0): a bucket that never
  // refills is not a rate. The burst is still read, so the switch keeps the rest of the options.
  const burst =
    o.burst === undefined
      ? limit
      : positiveInteger(o.burst, 'tokenBucket.burst', limit === 0 ? 0 : 1);
  // Tokens are counted in units of 1/unit so that refill (rate units per µs) is an integer.
  const g = gcd(limit, windowUs);
  const unit = windowUs / g;
  const rate = limit / g;
  if (limit > 0 && burst * unit > Number.MAX_SAFE_INTEGER) {
    throw configError(
      'tokenBucket.burst',
      burst,
      `at most ${Math.floor(Number.MAX_SAFE_INTEGER / unit)} for this limit and window`,
    );
  }
  return definePolicy({
    kind: 'token-bucket',
    tag: 'tb',
    name: o.name,
    nameField: 'tokenBucket.name',
    defaultName: `token-bucket-${rateName(limit, windowUs)}${burst === limit ? '' : `-burst-${burst}`}`,
    limit,
    windowUs,
    capacity: limit === 0 ? 0 : burst,
    options: { limit, window: windowUs / 1000, burst },
    // limit 0: an empty bucket (burst 0) that drains nothing in (rate 1: no division by 0).
    params: (limit === 0 ? [windowUs, 1, 0] : [unit, rate, burst]) satisfies TokenBucketParams,
    blockDuration: o.blockDuration,
  });
}

interface TokenBucketState {
  /** Scaled units in the bucket at `since`. */
  units: number;
  since: number;
}

/** The ARGV lua/token-bucket.lua reads after the algorithm name (µs for times). */
export type TokenBucketParams = readonly [unit: number, rate: number, burst: number];

/** Twin of lua/token-bucket.lua. */
export const tokenBucketAlgorithm: Algorithm<TokenBucketState, TokenBucketParams> = {
  kind: 'token-bucket',
  leasable: true,
  check(state, now, cost, [unit, rate, burst], _slack, force) {
    const capacity = burst * unit;
    let units = capacity;
    let since = now;
    if (state !== undefined) {
      units = refilled(state.units, state.since, capacity, rate, now);
      since = Math.max(state.since, now);
    }
    const need = cost * unit;
    // A charge takes the tokens even when they are not there: debt, tokens below 0.
    if ((cost <= burst && units >= need) || force === true) {
      const left = units - need;
      const resetAfter = Math.ceil((capacity - left) / rate);
      return {
        allowed: true,
        remaining: Math.floor(left / unit),
        resetAfter,
        retryAfter: 0,
        delay: 0,
        next: { units: left, since },
        ttl: resetAfter,
      };
    }
    return {
      allowed: false,
      // In debt no whole token is left.
      remaining: units > 0 ? Math.floor(units / unit) : 0,
      resetAfter: Math.ceil((capacity - units) / rate),
      retryAfter: cost > burst ? -1 : Math.ceil((need - units) / rate),
      delay: 0,
    };
  },
  refund(state, now, cost, [unit, rate, burst]) {
    if (state === undefined) return undefined;
    const capacity = burst * unit;
    // Stored units are always below capacity: a full bucket is a missing key.
    let units = refilled(state.units, state.since, capacity, rate, now);
    if (units >= capacity) return undefined;
    const since = Math.max(state.since, now);
    if (cost >= Math.ceil((capacity - units) / unit)) return 'delete';
    units += cost * unit;
    return { next: { units, since }, ttl: Math.ceil((capacity - units) / rate) };
  },
};
