// smoothBursty: the policy factory, its parameters and the TypeScript twin of lua/smooth-bursty.lua.
import type { Duration } from '../duration.js';
import { formatDuration, parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import { type Algorithm, gcd, refilled, type Verdict } from './algorithm.js';

/**
 * Options of `smoothBursty` (Guava `SmoothBursty`): `limit` per `window`, evenly spaced; a
 * request is admitted when the next free time has come and the next one pays for its cost;
 * idle time stores up to `maxBurst` worth of permits.
 *
 * @example
 * ```ts
 * smoothBursty({ limit: 5, window: '1s', maxBurst: '2s' });
 * ```
 */
export interface SmoothBurstyOptions {
  /**
   * Permits per window: the stable rate is limit / window (Guava `permitsPerSecond`); 0 admits
   * nothing (every cost > 0 is denied for good).
   */
  limit: number;
  window: Duration;
  /**
   * How much idle time is stored as permits (Guava `maxBurstSeconds`): an idle key stores up to
   * maxBurst × limit / window permits. 0 stores none. @default window
   */
  maxBurst?: Duration;
  /** @default `smooth-bursty-<limit>-per-<window>[-max-burst-<maxBurst>]` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/**
 * Waits longer than this are charged as this (µs, 1000 days): they are beyond exact integer
 * arithmetic, where Guava saturates at Long.MAX_VALUE. Mirrors SATURATED_WAIT_US in the prelude.
 */
export const SATURATED_WAIT_US = 86_400_000_000_000;

/**
 * How long a bursty key that has filled its stored permits is kept before it is forgotten
 * (µs; maxBurst when longer). A forgotten key starts again like a new Guava limiter, with no
 * stored permits, so it must outlive typical idle periods; state per key is one short string.
 */
export const SMOOTH_BURSTY_RETENTION_US = 3_600_000_000;

/**
 * The `maxCost` param of a smooth policy with limit 0: every cost > 0 is denied with
 * retryAfter −1, a cost 0 reads an empty key (lua/smooth-*.lua).
 */
export const NOTHING_ADMITTED = -1;

/** Every option name of SmoothBurstyOptions, checked against the type. */
const SMOOTH_BURSTY_OPTION_NAMES = optionNames<SmoothBurstyOptions>({
  limit: true,
  window: true,
  maxBurst: true,
  name: true,
  blockDuration: true,
});

/**
 * Guava's SmoothBursty RateLimiter per key: a request is admitted when the key's next-free time
 * has come, whatever its cost, and pays afterwards — stored permits are free, fresh ones cost
 * window/limit each and push the next-free time forward (reserve now, pay later). Idle time
 * stores up to `maxBurst` worth of permits. A new key has none stored. `consume` is
 * `tryAcquire(cost)`; `limiter.acquire` is `acquire(cost)` / `tryAcquire(cost, maxWait)`.
 */
export function smoothBursty(options: SmoothBurstyOptions): Policy {
  const o = readOptions(options, 'smoothBursty', SMOOTH_BURSTY_OPTION_NAMES);
  // 0 admits nothing (docs/algorithms.md#limit-0): unlike Guava, which refuses a rate of 0.
  const limit = positiveInteger(o.limit, 'smoothBursty.limit', 0);
  const windowUs = parseDuration(o.window, 'smoothBursty.window');
  const maxBurstUs =
    o.maxBurst === undefined ? windowUs : parseDuration(o.maxBurst, 'smoothBursty.maxBurst', true);
  // One permit = unit scaled units; idle time stores `rate` units per µs, exactly.
  const g = gcd(limit, windowUs);
  const unit = windowUs / g;
  const rate = limit / g;
  const maxStored = maxBurstUs * rate;
  if (limit > 0 && maxStored > Number.MAX_SAFE_INTEGER / 4) {
    throw configError(
      'smoothBursty.maxBurst',
      o.maxBurst ?? maxBurstUs / 1000,
      'short enough that maxBurst × limit / gcd(limit, window µs) stays below 2^51',
    );
  }
  const retention = Math.max(SMOOTH_BURSTY_RETENTION_US, maxBurstUs);
  // Costs above this charge SATURATED_WAIT_US: cost × unit would leave exact arithmetic.
  const maxCost = Math.floor(Number.MAX_SAFE_INTEGER / unit);
  const burstSuffix = maxBurstUs === windowUs ? '' : `-max-burst-${formatDuration(maxBurstUs)}`;
  return definePolicy({
    kind: 'smooth-bursty',
    tag: 'sb',
    name: o.name,
    nameField: 'smoothBursty.name',
    defaultName: `smooth-bursty-${rateName(limit, windowUs)}${burstSuffix}`,
    limit,
    windowUs,
    capacity: limit,
    options: { limit, window: windowUs / 1000, maxBurst: maxBurstUs / 1000 },
    // limit 0: maxCost −1 (no cost > 0 is ever admitted), nothing stored, rate 1 (no division by 0).
    params: (limit === 0
      ? [1, 1, 0, 0, NOTHING_ADMITTED]
      : [unit, rate, maxStored, retention, maxCost]) satisfies SmoothBurstyParams,
    blockDuration: o.blockDuration,
  });
}

interface SmoothBurstyState {
  /** Guava nextFreeTicketMicros. */
  nextFree: number;
  /** Guava storedPermits, in units (one permit = `unit`). */
  stored: number;
}

/** The ARGV lua/smooth-bursty.lua reads after the algorithm name (µs for times). */
export type SmoothBurstyParams = readonly [
  unit: number,
  rate: number,
  maxStored: number,
  retention: number,
  maxCost: number,
];

/** What a smooth policy with limit 0 answers: cost 0 reads an empty key, any other is denied for good. */
export function nothingAdmitted(cost: number): Verdict {
  return {
    allowed: cost === 0,
    remaining: 0,
    resetAfter: 0,
    retryAfter: cost === 0 ? 0 : -1,
    delay: 0,
  };
}

/**
 * A smooth limiter's refusal while its next-free time is `ahead` µs away (both Guava limiters):
 * nothing remains, and the key is back to full once next-free has come and `stored` units have
 * grown to `maxStored` at `perUs` units per µs.
 */
export function notFreeYet(
  ahead: number,
  stored: number,
  maxStored: number,
  perUs: number,
): Verdict {
  return {
    allowed: false,
    remaining: 0,
    resetAfter: ahead + Math.ceil((maxStored - stored) / perUs),
    retryAfter: ahead,
    delay: 0,
  };
}

/** Twin of lua/smooth-bursty.lua. */
export const smoothBurstyAlgorithm: Algorithm<SmoothBurstyState, SmoothBurstyParams> = {
  kind: 'smooth-bursty',
  check(state, now, cost, [unit, rate, maxStored, retention, maxCost], slack = 0) {
    let nextFree = now;
    let stored = 0;
    if (
      state !== undefined &&
      now < state.nextFree + Math.ceil((maxStored - state.stored) / rate) + retention
    ) {
      nextFree = state.nextFree;
      stored = state.stored;
    }
    // Guava resync: time past next-free stores permits, up to maxStored.
    stored = refilled(stored, nextFree, maxStored, rate, now);
    nextFree = Math.max(nextFree, now);
    const ahead = nextFree - now;
    if (cost > 0 && ahead > slack) return notFreeYet(ahead, stored, maxStored, rate);
    // Guava reserveEarliestAvailable: stored permits are free, fresh ones cost unit/rate µs.
    let wait = SATURATED_WAIT_US;
    let left = 0;
    if (cost <= maxCost) {
      const need = cost * unit;
      const spend = Math.min(need, stored);
      wait = Math.min(Math.ceil((need - spend) / rate), SATURATED_WAIT_US);
      left = stored - spend;
    } else if (maxCost === NOTHING_ADMITTED) {
      return nothingAdmitted(cost);
    }
    const after = nextFree + wait;
    const remaining = after <= now ? Math.floor(left / unit) + 1 : 0;
    const resetAfter = after - now + Math.ceil((maxStored - left) / rate);
    return {
      allowed: true,
      remaining,
      resetAfter,
      retryAfter: 0,
      delay: cost > 0 ? ahead : 0,
      next: { nextFree: after, stored: left },
      ttl: resetAfter + retention,
    };
  },
  refund(state, now, cost, [unit, rate, maxStored, retention, maxCost]) {
    // Next-free moves back by the cost's fresh-permit time, never before now.
    if (state === undefined || state.nextFree <= now) return undefined;
    let back = state.nextFree - now;
    if (cost <= maxCost) back = Math.min(back, Math.floor((cost * unit) / rate));
    if (back === 0) return undefined;
    const nextFree = state.nextFree - back;
    return {
      next: { nextFree, stored: state.stored },
      ttl: nextFree - now + Math.ceil((maxStored - state.stored) / rate) + retention,
    };
  },
};
