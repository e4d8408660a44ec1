/**
 * Durations: a number of milliseconds, or a string such as `'250ms'`, `'1.5s'`, `'1m'`, `'1h'`,
 * `'1d'`. Internally every duration is a whole number of microseconds, the unit all
 * algorithms compute in.
 */
import { configError } from './options.js';

/** A duration: milliseconds, or a string with a unit (`us`, `ms`, `s`, `m`, `h`, `d`). */
export type Duration = number | `${number}${'us' | 'ms' | 's' | 'm' | 'h' | 'd'}`;

const MICROS_PER_UNIT: Record<string, number> = {
  us: 1,
  ms: 1_000,
  s: 1_000_000,
  m: 60_000_000,
  h: 3_600_000_000,
  d: 86_400_000_000,
};

/** The longest duration accepted: 1000 days keeps every sum of times far below 2^53 µs. */
export const MAX_DURATION_US = 1000 * MICROS_PER_UNIT.d!;

/**
 * Parses a duration into whole microseconds. Throws RateLimitConfigError naming `field` when
 * the value is not a positive (or, with `allowZero`, non-negative) duration with at most
 * microsecond precision.
 */
export function parseDuration(value: unknown, field: string, allowZero = false): number {
  const micros = durationMicros(value, allowZero);
  if (typeof micros === 'string') throw configError(field, value, micros);
  return micros;
}

/**
 * A duration in whole microseconds, or, when `value` is not a valid one, what was expected
 * instead (for a configuration error or a bad call argument alike).
 */
export function durationMicros(value: unknown, allowZero = false): number | string {
  const expected = `a ${allowZero ? 'non-negative' : 'positive'} duration (milliseconds, or a string like '250ms', '1s', '1m', '1h', '1d')`;
  let micros: number;
  if (typeof value === 'number') {
    micros = Math.round(value * 1000);
    if (!Number.isFinite(value) || Math.abs(micros - value * 1000) > 1e-6 * Math.max(1, micros)) {
      return `${expected} with at most microsecond precision`;
    }
  } else if (typeof value === 'string') {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h|d)\s*$/.exec(value);
    if (!match) return expected;
    const exact = Number(match[1]) * MICROS_PER_UNIT[match[2]!]!;
    micros = Math.round(exact);
    if (Math.abs(micros - exact) > 1e-6 * Math.max(1, micros)) {
      return `${expected} with at most microsecond precision`;
    }
  } else {
    return expected;
  }
  if (micros < 0 || (!allowZero && micros === 0) || micros > MAX_DURATION_US) {
    return `${expected} of at most 1000 days`;
  }
  return micros;
}

/** Formats microseconds for a policy name: `60s`, `250ms`, `1500us`. */
export function formatDuration(micros: number): string {
  if (micros % 1_000_000 === 0) return `${micros / 1_000_000}s`;
  if (micros % 1_000 === 0) return `${micros / 1_000}ms`;
  return `${micros}us`;
}
