import fc from 'fast-check';
import { slidingWindow } from '../../../src/index';
import { slidingWindowScenarios } from '../../../src/testing/scenarios/sliding-window';
import { type AlgorithmCases, limitArbitrary } from '../table';

/** Windows that split into `buckets` whole microseconds: whole milliseconds, or a few µs. */
const slidingWindowArbitrary = fc.integer({ min: 1, max: 6 }).chain((buckets) =>
  fc.record({
    limit: limitArbitrary(1, 7),
    buckets: fc.constant(buckets),
    window: fc.oneof(
      fc.integer({ min: 1, max: 600 }).map((n) => n * buckets),
      fc.integer({ min: 1, max: 1000 }).map((n) => `${n * buckets}us` as const),
    ),
  }),
);

/** slidingWindow: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const slidingWindowCases: AlgorithmCases = {
  kind: 'sliding-window',
  arbitrary: slidingWindowArbitrary.map((o) => slidingWindow(o)),
  scenarios: slidingWindowScenarios,
};
