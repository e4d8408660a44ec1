// leakyBucket: the policy factory, its parameters and the TypeScript twin of lua/leaky-bucket.lua.
import type { Duration } from '../duration.js';
import { parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import { type Algorithm, gcd } from './algorithm.js';

/**
 * Options of `leakyBucket` (nginx `limit_req`): excess drains at `limit` per `window`; more
 * than `burst` excess is refused. Without `delay` it polices (`nodelay`); with `delay: n` the
 * first n excess requests pass at once and later ones are held for `decision.delay` ms.
 *
 * @example
 * ```ts
 * leakyBucket({ limit: 5, window: '1m', burst: 2 }); // logins: 1 + 2 at once, then 5 a minute
 * leakyBucket({ limit: 10, window: '1s', burst: 20, delay: 5 }); // shape instead of refusing
 * ```
 */
export interface LeakyBucketOptions {
  /**
   * Requests drained per window (nginx `rate`: the sustained rate is limit / window); 0 admits
   * nothing (not even the one request nginx admits beyond `burst`).
   */
  limit: number;
  window: Duration;
  /** Excess requests held above the rate (nginx `burst`); capacity is burst + 1. @default 0 */
  burst?: number;
  /**
   * Shaping (nginx `delay=`): the first `delay` excess requests pass at once, later ones are
   * admitted with `decision.delay` ms to wait so they leave at the rate; `0` delays every
   * excess request (nginx's default). Omitted: nginx `nodelay`, nothing is ever delayed.
   */
  delay?: number;
  /** @default `leaky-bucket-<limit>-per-<window>[-burst-<burst>][-delay-<delay>]` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** Every option name of LeakyBucketOptions, checked against the type. */
const LEAKY_BUCKET_OPTION_NAMES = optionNames<LeakyBucketOptions>({
  limit: true,
  window: true,
  burst: true,
  delay: true,
  name: true,
  blockDuration: true,
});

/**
 * nginx `limit_req`: excess drains continuously at limit/window; a request is rejected when
 * its excess would exceed `burst` (rejected requests are not recorded), so an idle key admits
 * burst + 1 back to back. With `delay`, admitted requests beyond the first `delay` excess ones
 * are shaped to the rate through `decision.delay`. A request of cost c counts as c requests
 * arriving together (all or none).
 */
export function leakyBucket(options: LeakyBucketOptions): Policy {
  const o = readOptions(options, 'leakyBucket', LEAKY_BUCKET_OPTION_NAMES);
  // 0 admits nothing, not even nginx's one request beyond the burst (docs/algorithms.md#limit-0).
  const limit = positiveInteger(o.limit, 'leakyBucket.limit', 0);
  const windowUs = parseDuration(o.window, 'leakyBucket.window');
  const burst = o.burst === undefined ? 0 : positiveInteger(o.burst, 'leakyBucket.burst', 0);
  const delay =
    o.delay === undefined ? undefined : positiveInteger(o.delay, 'leakyBucket.delay', 0);
  // Excess is counted in units of 1/unit request, so that draining (rate units per µs) is exact.
  const g = gcd(limit, windowUs);
  const unit = windowUs / g;
  const rate = limit / g;
  if (limit > 0 && (burst + 1) * unit > Number.MAX_SAFE_INTEGER) {
    throw configError(
      'leakyBucket.burst',
      burst,
      `at most ${Math.floor(Number.MAX_SAFE_INTEGER / unit) - 1} for this limit and window`,
    );
  }
  return definePolicy({
    kind: 'leaky-bucket',
    tag: 'lb',
    name: o.name,
    nameField: 'leakyBucket.name',
    defaultName: `leaky-bucket-${rateName(limit, windowUs)}${burst === 0 ? '' : `-burst-${burst}`}${delay === undefined ? '' : `-delay-${delay}`}`,
    limit,
    windowUs,
    capacity: limit === 0 ? 0 : burst + 1,
    options: { limit, window: windowUs / 1000, burst, ...(delay === undefined ? {} : { delay }) },
    // An admitted request's excess never exceeds burst, so `nodelay` (and any delay above
    // burst) is delay = burst: equal behaviour, equal params, equal id.
    // limit 0: capacity (burst + 1) · unit = 0 with burst −1; rate 1 drains nothing ever stored.
    params: (limit === 0
      ? [windowUs, 1, -1, -1]
      : [unit, rate, burst, Math.min(delay ?? burst, burst)]) satisfies LeakyBucketParams,
    blockDuration: o.blockDuration,
  });
}

interface LeakyBucketState {
  /** nginx's excess after the last admitted request, in units. */
  excess: number;
  /** nginx's `last` (µs). */
  since: number;
}

/** The ARGV lua/leaky-bucket.lua reads after the algorithm name (µs for times). */
export type LeakyBucketParams = readonly [unit: number, rate: number, burst: number, delay: number];

/** Twin of lua/leaky-bucket.lua. */
export const leakyBucketAlgorithm: Algorithm<LeakyBucketState, LeakyBucketParams> = {
  kind: 'leaky-bucket',
  check(state, now, cost, [unit, rate, burst, delay]) {
    const capacity = (burst + 1) * unit;
    // The next request's excess before flooring: the excess left plus the last request itself.
    let level = 0;
    let since = now;
    if (state !== undefined) {
      since = Math.max(state.since, now);
      const elapsed = since - state.since;
      if (elapsed < Math.ceil((state.excess + unit) / rate)) {
        level = state.excess + unit - elapsed * rate;
      }
    }
    const ahead = since - now;
    if (cost <= burst + 1 && level + cost * unit <= capacity) {
      const after = level + cost * unit;
      let excess = 0;
      let wait = 0;
      if (cost > 0) {
        excess = after - unit;
        if (excess > delay * unit) wait = ahead + Math.ceil((excess - delay * unit) / rate);
      }
      const resetAfter = ahead + Math.ceil(after / rate);
      const result = {
        allowed: true,
        remaining: Math.floor((capacity - after) / unit),
        resetAfter,
        retryAfter: 0,
        delay: wait,
      };
      return cost === 0 ? result : { ...result, next: { excess, since }, ttl: resetAfter };
    }
    const resetAfter = ahead + Math.ceil(level / rate);
    const remaining = Math.floor((capacity - level) / unit);
    if (cost > burst + 1)
      return { allowed: false, remaining, resetAfter, retryAfter: -1, delay: 0 };
    return {
      allowed: false,
      remaining,
      resetAfter,
      retryAfter: ahead + Math.ceil((level + cost * unit - capacity) / rate),
      delay: 0,
    };
  },
  refund(state, now, cost, [unit, rate]) {
    // The level (excess plus the last request) drops by `cost` requests; the excess stored is
    // level − unit, negative when less than one request is left to drain.
    if (state === undefined) return undefined;
    const since = Math.max(state.since, now);
    const elapsed = since - state.since;
    if (elapsed >= Math.ceil((state.excess + unit) / rate)) return undefined;
    let level = state.excess + unit - elapsed * rate;
    if (cost >= Math.ceil(level / unit)) return 'delete';
    level -= cost * unit;
    return { next: { excess: level - unit, since }, ttl: since - now + Math.ceil(level / rate) };
  },
};
