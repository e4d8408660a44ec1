/**
 * What every adaptive limit algorithm shares: the sample it learns from, the fixed-point scale
 * its limit is kept in, and the readers of its numeric options.
 */
import { configError } from '../options.js';

/**
 * Limits are kept in thousandths of a request, latencies in integer microseconds: every
 * algorithm computes in integers (as the rate-limit policies do), so a trace gives the same
 * limits on every platform, to the last unit.
 */
export const SCALE = 1000;

/** One finished request, as an algorithm learns from it. */
export interface LimitSample {
  /** Latency from acquire to release, in integer microseconds (at least 1). */
  readonly rtt: number;
  /** Requests in flight when this one was admitted (itself included). */
  readonly inFlight: number;
  /** The request was dropped (timed out, or failed because the service was overloaded). */
  readonly dropped: boolean;
  /**
   * The limit refused a request for lack of room while this one was in flight: its latency may
   * include a queue the limit itself let in. @default false
   */
  readonly saturated?: boolean;
}

/** An adaptive concurrency limit: learns from samples, answers the current limit. */
export interface LimitAlgorithm {
  /** The current limit in whole requests (the estimate rounded down). */
  readonly limit: number;
  /** Feeds one finished request to the estimator. */
  update(sample: LimitSample): void;
}

/** The bounds every algorithm shares, read and checked against each other. */
export interface LimitBounds {
  readonly initialLimit: number;
  readonly minLimit: number;
  readonly maxLimit: number;
}

/** Reads an integer option (`fallback` when not given). */
export function integerOption(value: unknown, field: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw configError(field, value, `an integer >= ${min}`);
  }
  return value;
}

/**
 * Reads a ratio option as an integer in thousandths (0.9 → 900), within [min, max] (thousandths)
 * and given to at most three decimals, so the integer arithmetic that uses it is exact.
 */
export function permilleOption(
  value: unknown,
  field: string,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const expected = `a number from ${min / SCALE} to ${max / SCALE} with at most 3 decimals`;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw configError(field, value, expected);
  const permille = Math.round(value * SCALE);
  if (Math.abs(permille - value * SCALE) > 1e-6 || permille < min || permille > max) {
    throw configError(field, value, expected);
  }
  return permille;
}

/** Reads initialLimit, minLimit and maxLimit, requiring min ≤ initial ≤ max. */
export function readBounds(
  o: Record<string, unknown>,
  where: string,
  defaults: LimitBounds,
): LimitBounds {
  const minLimit = integerOption(o.minLimit, `${where}.minLimit`, defaults.minLimit);
  const maxLimit = integerOption(o.maxLimit, `${where}.maxLimit`, defaults.maxLimit);
  if (maxLimit < minLimit) {
    throw configError(`${where}.maxLimit`, maxLimit, `an integer >= minLimit (${minLimit})`);
  }
  const initialLimit = integerOption(
    o.initialLimit,
    `${where}.initialLimit`,
    defaults.initialLimit,
  );
  if (initialLimit < minLimit || initialLimit > maxLimit) {
    throw configError(
      `${where}.initialLimit`,
      initialLimit,
      `an integer from minLimit (${minLimit}) to maxLimit (${maxLimit})`,
    );
  }
  return { initialLimit, minLimit, maxLimit };
}

/** `value` held within [min, max]. */
export function clamp(value: number, min: number, max: number): number {
  return Math.min(Math.max(value, min), max);
}
