import fc from 'fast-check';
import { leakyBucket } from '../../../src/index';
import { leakyBucketScenarios } from '../../../src/testing/scenarios/leaky-bucket';
import { type AlgorithmCases, limitArbitrary, windowArbitrary } from '../table';

/** leakyBucket: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const leakyBucketCases: AlgorithmCases = {
  kind: 'leaky-bucket',
  arbitrary: fc
    .record({
      limit: limitArbitrary(1, 7),
      window: windowArbitrary,
      burst: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      delay: fc.option(fc.integer({ min: 0, max: 7 }), { nil: undefined }),
    })
    .map(({ burst, delay, ...o }) =>
      leakyBucket({
        ...o,
        ...(burst === undefined ? {} : { burst }),
        ...(delay === undefined ? {} : { delay }),
      }),
    ),
  scenarios: leakyBucketScenarios,
};
