/** configErrorOf: the RateLimitConfigError a construction throws, for option tests in every package. */
import { RateLimitConfigError } from '@floodgate/core';

/** Runs `build` and returns the RateLimitConfigError it throws; fails the test if it throws none. */
export function configErrorOf(build: () => unknown): RateLimitConfigError {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(RateLimitConfigError);
    return error as RateLimitConfigError;
  }
  throw new Error('expected a RateLimitConfigError, nothing was thrown');
}
