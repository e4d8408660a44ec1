// Time for the limiters: the `clock` option (epoch ms, fractions allowed), read as integer microseconds.
import { describeValue, RateLimitStoreError } from './errors.js';
import { configError } from './options.js';

/** Epoch milliseconds; fractions carry sub-millisecond precision. */
export type Clock = () => number;

/** `performance.timeOrigin` is a getter: read once (it never changes in a process). */
const TIME_ORIGIN = performance.timeOrigin;

/** The process clock with microsecond resolution (monotonic between calls in one process). */
export const processClock: Clock = () => TIME_ORIGIN + performance.now();

/** Reads a clock as integer microseconds, refusing values no algorithm can use. */
export function readMicros(clock: Clock): number {
  const ms = clock();
  const us = Math.round(ms * 1000);
  if (!Number.isSafeInteger(us) || us < 0) {
    throw new RateLimitStoreError(`the clock returned ${ms}, expected epoch milliseconds`);
  }
  return us;
}

/**
 * Validates an injected clock at construction: a function whose reading right now is epoch
 * milliseconds that `readMicros` accepts. A clock answering NaN (or throwing) is a configuration
 * error here, not a store failure on every later decision.
 */
export function readClockOption(value: unknown, field: string): Clock | undefined {
  if (value === undefined) return undefined;
  const expected = 'a function returning epoch milliseconds';
  if (typeof value !== 'function') throw configError(field, value, expected);
  let reading: unknown;
  try {
    reading = value();
  } catch (error) {
    throw configError(
      field,
      value,
      `${expected} (calling it threw: ${(error as Error)?.message ?? error})`,
    );
  }
  const us = typeof reading === 'number' ? Math.round(reading * 1000) : Number.NaN;
  if (!Number.isSafeInteger(us) || us < 0) {
    throw configError(field, value, `${expected} (it returned ${describeValue(reading)})`);
  }
  return value as Clock;
}
