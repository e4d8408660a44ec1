import { RateLimitStoreError } from './errors.js';

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
