/**
 * The `lease` option of a RateLimiter (quota leases, docs/algorithms.md#quota-leases): blocks of
 * a key's units taken from the store in one call and spent in this process. Read once, at
 * construction, into a fully defined LeaseConfig.
 */
import { type Duration, parseDuration } from '../duration.js';
import { RateLimitConfigError } from '../errors.js';
import { configError, optionNames, readOptions } from '../options.js';
import type { Policy } from '../policy.js';
import { LEASE_KINDS } from '../stores/lease-take.js';

/** The factories of the kinds that can be leased, as a message names them (fixedWindow, gcra). */
const LEASABLE = [...LEASE_KINDS]
  .map((kind) => kind.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()))
  .join(', ');

/** Leased blocks of units for every key, or only the hot ones. */
export interface LeaseOptions {
  /**
   * Units one take asks for: a number (always that many), or `{ min, max }`: the block size
   * adapts to this process's demand per key, doubling while a block is spent before a quarter
   * of its `ttl` and halving when one expires half unused.
   */
  units: number | { min: number; max: number };
  /** Longest time a block is spent in this process before it is given back. @default '1s' */
  ttl?: Duration;
  /**
   * `'all'`: every key leases. `'hot'`: only keys that take at least 5 % of this limiter's
   * recent decisions in this process (a fixed-memory Space-Saving sketch); the others are
   * decided by the store one by one. @default 'all'
   */
  keys?: 'all' | 'hot';
}

/**
 * `'auto'`: `{ units: { min: 8, max: 1000 }, ttl: '1s', keys: 'hot' }`, leasing for the keys
 * the sketch flags hot.
 */
export type LeaseOption = LeaseOptions | 'auto';

/** The `lease` option, read. Times in microseconds. */
export interface LeaseConfig {
  readonly min: number;
  readonly max: number;
  readonly ttl: number;
  readonly hotOnly: boolean;
}

/** `lease: 'auto'`'s block sizes. */
export const AUTO_LEASE_UNITS = Object.freeze({ min: 8, max: 1000 });
/** @default '1s' */
export const DEFAULT_LEASE_TTL_US = 1_000_000;

const LEASE_OPTION_NAMES = optionNames<LeaseOptions>({ units: true, ttl: true, keys: true });
const UNITS_NAMES = optionNames<{ min: number; max: number }>({ min: true, max: true });

function units(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw configError(field, value, 'a positive integer');
  }
  return value;
}

/**
 * Reads `lease` (undefined: no leasing). A limiter leases only policies whose units can be
 * spent later than they were charged without over-admitting (fixedWindow without
 * extendWindow, slidingWindow, tokenBucket, gcra), without a lockout (a block decided in
 * process cannot start one): FLOODGATE_NO_LEASE otherwise.
 */
export function readLeaseOption(
  value: unknown,
  where: string,
  policies: readonly Policy[],
): LeaseConfig | undefined {
  if (value === undefined) return undefined;
  const field = `${where}.lease`;
  let config: LeaseConfig;
  if (value === 'auto') {
    config = { ...AUTO_LEASE_UNITS, ttl: DEFAULT_LEASE_TTL_US, hotOnly: true };
  } else {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw configError(field, value, "'auto' or { units, ttl?, keys? }");
    }
    const o = readOptions(value, field, LEASE_OPTION_NAMES);
    let min: number;
    let max: number;
    if (typeof o.units === 'object' && o.units !== null) {
      const range = readOptions(o.units, `${field}.units`, UNITS_NAMES);
      min = units(range.min, `${field}.units.min`);
      max = units(range.max, `${field}.units.max`);
      if (max < min) throw configError(`${field}.units.max`, max, `at least units.min (${min})`);
    } else {
      min = max = units(o.units, `${field}.units`);
    }
    const ttl = o.ttl === undefined ? DEFAULT_LEASE_TTL_US : parseDuration(o.ttl, `${field}.ttl`);
    if (o.keys !== undefined && o.keys !== 'all' && o.keys !== 'hot') {
      throw configError(`${field}.keys`, o.keys, "'all' or 'hot'");
    }
    config = { min, max, ttl, hotOnly: o.keys === 'hot' };
  }
  policies.forEach((p, i) => {
    const reason = !LEASE_KINDS.has(p.kind)
      ? `a ${p.kind} policy cannot be leased (${LEASABLE} can)`
      : p.options.extendWindow !== undefined
        ? 'a fixedWindow with extendWindow cannot be leased (a hit moves its window)'
        : p.lockout !== undefined
          ? 'a policy with blockDuration cannot be leased (a denial in process starts no lockout)'
          : undefined;
    if (reason !== undefined) {
      throw new RateLimitConfigError(
        'FLOODGATE_NO_LEASE',
        field,
        value,
        `${field}: policies[${i}] (${p.name}): ${reason}`,
      );
    }
  });
  return config;
}
