import fc from 'fast-check';
import { tokenBucket } from '../../../src/index';
import { tokenBucketScenarios } from '../../../src/testing/scenarios/token-bucket';
import { type AlgorithmCases, limitArbitrary, windowArbitrary } from '../table';

/** tokenBucket: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const tokenBucketCases: AlgorithmCases = {
  kind: 'token-bucket',
  arbitrary: fc
    .record({
      limit: limitArbitrary(1, 7),
      window: windowArbitrary,
      burst: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    })
    .map(({ burst, ...o }) => tokenBucket(burst === undefined ? o : { ...o, burst })),
  scenarios: tokenBucketScenarios,
};
