// smoothWarmingUp: the policy factory, its parameters and the TypeScript twin of lua/smooth-warming-up.lua.
import type { Duration } from '../duration.js';
import { formatDuration, parseDuration } from '../duration.js';
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import { type BlockDuration, definePolicy, type Policy, rateName } from '../policy.js';
import { type Algorithm, gcd, refilled } from './algorithm.js';
import {
  NOTHING_ADMITTED,
  notFreeYet,
  nothingAdmitted,
  SATURATED_WAIT_US,
} from './smooth-bursty.js';

/**
 * Options of `smoothWarmingUp` (Guava `SmoothWarmingUp`): starts cold, `coldFactor` times
 * slower, and reaches `limit` per `window` after `warmup` of steady use.
 *
 * @example
 * ```ts
 * smoothWarmingUp({ limit: 100, window: '1s', warmup: '10s' }); // ramps up over 10 s
 * ```
 */
export interface SmoothWarmingUpOptions {
  /** Permits per window at the stable (warm) rate; 0 admits nothing. */
  limit: number;
  window: Duration;
  /** Guava `warmupPeriod`: how long saturated demand takes to go from cold to the stable rate. */
  warmup: Duration;
  /**
   * How much slower than the stable rate a cold key is: the cold interval is coldFactor × the
   * stable interval. At least 1 (1 means no warm-up, as in Guava), at most two decimals.
   * @default 3
   */
  coldFactor?: number;
  /** @default `smooth-warming-up-<limit>-per-<window>-warmup-<warmup>[-cold-<coldFactor>]` */
  name?: string;
  /**
   * Lock the key out for this long once this policy denies it (a cost it could admit);
   * progressive with `{ initial, multiplier, max, forgetAfter }`. docs/algorithms.md#blocks
   */
  blockDuration?: BlockDuration;
}

/** Guava's hard-coded cold factor. @default 3 */
export const DEFAULT_COLD_FACTOR = 3;
/** coldFactor is read as c/d with d dividing this (two decimals), so the maths stays exact. */
const COLD_FACTOR_SCALE = 100;
/** The largest coldFactor accepted (Guava's is 3): keeps c/d and every product below exact limits. */
export const MAX_COLD_FACTOR = 1_000_000;
/** Every divisor of the warm-up maths stays below this, so partial sums stay below 2^53. */
const MAX_DIVISOR = 2 ** 51;

/** Every option name of SmoothWarmingUpOptions, checked against the type. */
const SMOOTH_WARMING_UP_OPTION_NAMES = optionNames<SmoothWarmingUpOptions>({
  limit: true,
  window: true,
  warmup: true,
  coldFactor: true,
  name: true,
  blockDuration: true,
});

/**
 * Guava's SmoothWarmingUp RateLimiter per key: as smoothBursty, a request is admitted when the
 * next-free time has come and pays afterwards, but stored permits (accumulated while idle) cost
 * more than fresh ones — from coldFactor × the stable interval when cold down to the stable
 * interval at thresholdPermits — so a cold key ramps up to the stable rate over `warmup`.
 * A new key is cold.
 */
export function smoothWarmingUp(options: SmoothWarmingUpOptions): Policy {
  const o = readOptions(options, 'smoothWarmingUp', SMOOTH_WARMING_UP_OPTION_NAMES);
  // 0 admits nothing (docs/algorithms.md#limit-0): unlike Guava, which refuses a rate of 0.
  const limit = positiveInteger(o.limit, 'smoothWarmingUp.limit', 0);
  const windowUs = parseDuration(o.window, 'smoothWarmingUp.window');
  const warmupUs = parseDuration(o.warmup, 'smoothWarmingUp.warmup');
  const coldFactor = o.coldFactor === undefined ? DEFAULT_COLD_FACTOR : o.coldFactor;
  const scaled = typeof coldFactor === 'number' ? Math.round(coldFactor * COLD_FACTOR_SCALE) : NaN;
  if (
    typeof coldFactor !== 'number' ||
    !Number.isFinite(coldFactor) ||
    coldFactor < 1 ||
    // Bounded first: a huge factor (1e307) scales to Infinity, and gcd() of it never returns.
    coldFactor > MAX_COLD_FACTOR ||
    Math.abs(scaled - coldFactor * COLD_FACTOR_SCALE) > 1e-9 * scaled
  ) {
    throw configError(
      'smoothWarmingUp.coldFactor',
      coldFactor,
      `a number from 1 (1 disables the warm-up, as in Guava) to ${MAX_COLD_FACTOR} with at most two decimals`,
    );
  }
  const g = gcd(scaled, COLD_FACTOR_SCALE);
  const c = scaled / g;
  const d = COLD_FACTOR_SCALE / g;
  const span = 2 * (d + c);
  if (span * 8 * warmupUs * d * d >= MAX_DIVISOR) {
    throw configError(
      'smoothWarmingUp.warmup',
      o.warmup,
      `short enough that 16 × warmup µs × d² × (c + d) < 2^51 for coldFactor = ${c}/${d}`,
    );
  }
  if (windowUs * span > Number.MAX_SAFE_INTEGER) {
    throw configError(
      'smoothWarmingUp.coldFactor',
      coldFactor,
      'small enough that window µs × 2 × (1 + coldFactor) × d stays below 2^53',
    );
  }
  // Costs above this charge SATURATED_WAIT_US: cost × window × span would leave exact arithmetic.
  const maxCost = Math.floor(Number.MAX_SAFE_INTEGER / (windowUs * span));
  const cold = coldFactor === DEFAULT_COLD_FACTOR ? '' : `-cold-${coldFactor}`;
  return definePolicy({
    kind: 'smooth-warming-up',
    tag: 'sw',
    name: o.name,
    nameField: 'smoothWarmingUp.name',
    defaultName: `smooth-warming-up-${rateName(limit, windowUs)}-warmup-${formatDuration(warmupUs)}${cold}`,
    limit,
    windowUs,
    capacity: limit,
    options: { limit, window: windowUs / 1000, warmup: warmupUs / 1000, coldFactor },
    // limit 0: maxCost −1, no cost > 0 is ever admitted (and nothing divides by the limit).
    params: [
      limit,
      windowUs,
      warmupUs,
      c,
      d,
      limit === 0 ? NOTHING_ADMITTED : maxCost,
    ] satisfies SmoothWarmingUpParams,
    blockDuration: o.blockDuration,
  });
}

interface SmoothWarmingUpState {
  /** Guava nextFreeTicketMicros. */
  nextFree: number;
  /** Guava storedPermits as stable-rate time, in 1/span µs. */
  stored: number;
}

/** The ARGV lua/smooth-warming-up.lua reads after the algorithm name (µs for times). */
export type SmoothWarmingUpParams = readonly [
  limit: number,
  window: number,
  warmup: number,
  c: number,
  d: number,
  maxCost: number,
];

/** Twin of lua/smooth-warming-up.lua (the trapezoid's exact division uses BigInt here). */
export const smoothWarmingUpAlgorithm: Algorithm<SmoothWarmingUpState, SmoothWarmingUpParams> = {
  kind: 'smooth-warming-up',
  check(state, now, cost, [limit, window, warmup, c, d, maxCost], slack = 0) {
    const span = 2 * (d + c);
    const perUs = 5 * d + c;
    const threshold = warmup * (d + c);
    const maxStored = warmup * perUs;
    // A missing key is a cold one: free now, full of (expensive) stored permits.
    let nextFree = state?.nextFree ?? now;
    let stored = state?.stored ?? maxStored;
    // Guava resync: time past next-free stores permits, up to maxStored.
    stored = refilled(stored, nextFree, maxStored, perUs, now);
    nextFree = Math.max(nextFree, now);
    const ahead = nextFree - now;
    if (cost > 0 && ahead > slack) return notFreeYet(ahead, stored, maxStored, perUs);
    // Guava reserveEarliestAvailable with storedPermitsToWaitTime: stable time for every unit,
    // plus the trapezoid over the threshold; wait = ceil((need·h + extra) / (span·h)).
    let wait = SATURATED_WAIT_US;
    let left = 0;
    if (cost <= maxCost) {
      const need = Math.ceil((cost * window * span) / limit);
      const spend = Math.min(need, stored);
      const above = Math.max(stored - threshold, 0);
      const steep = Math.min(above, spend);
      const h = 8 * warmup * d * d;
      let q = Math.floor(need / span);
      let rest = 0n;
      if (steep > 0 && c > d) {
        const area = BigInt((c - d) * steep) * BigInt(2 * above - steep);
        const divisor = BigInt(span * h);
        q += Number(area / divisor);
        rest = area % divisor;
      }
      const frac = (need - Math.floor(need / span) * span) * h + Number(rest);
      if (frac > span * h) q += 2;
      else if (frac > 0) q += 1;
      wait = Math.min(q, SATURATED_WAIT_US);
      left = stored - spend;
    } else if (maxCost === NOTHING_ADMITTED) {
      return nothingAdmitted(cost);
    }
    const after = nextFree + wait;
    const resetAfter = after - now + Math.ceil((maxStored - left) / perUs);
    return {
      allowed: true,
      remaining: after <= now ? 1 : 0,
      resetAfter,
      retryAfter: 0,
      delay: cost > 0 ? ahead : 0,
      next: { nextFree: after, stored: left },
      ttl: resetAfter,
    };
  },
  refund(state, now, cost, [limit, window, warmup, c, d, maxCost]) {
    // Next-free moves back by the cost's stable-rate time, never before now.
    if (state === undefined || state.nextFree <= now) return undefined;
    let back = state.nextFree - now;
    if (cost <= maxCost) back = Math.min(back, Math.floor((cost * window) / limit));
    if (back === 0) return undefined;
    const nextFree = state.nextFree - back;
    const perUs = 5 * d + c;
    return {
      next: { nextFree, stored: state.stored },
      ttl: nextFree - now + Math.ceil((warmup * perUs - state.stored) / perUs),
    };
  },
};
