import fc from 'fast-check';
import { smoothBursty } from '../../../src/index';
import { smoothBurstyScenarios } from '../../../src/testing/scenarios/smooth-bursty';
import { type AlgorithmCases, limitArbitrary, windowArbitrary } from '../table';

export { guavaAcquires } from '../../../src/testing/scenarios/smooth-bursty';

/** smoothBursty: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const smoothBurstyCases: AlgorithmCases = {
  kind: 'smooth-bursty',
  arbitrary: fc
    .record({
      limit: limitArbitrary(1, 7),
      window: windowArbitrary,
      maxBurst: fc.option(fc.oneof(fc.constant(0), windowArbitrary), { nil: undefined }),
    })
    .map(({ maxBurst, ...o }) => smoothBursty(maxBurst === undefined ? o : { ...o, maxBurst })),
  scenarios: smoothBurstyScenarios,
};
