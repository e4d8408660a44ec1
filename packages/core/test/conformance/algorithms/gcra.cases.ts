import fc from 'fast-check';
import { gcra } from '../../../src/index';
import { gcraScenarios } from '../../../src/testing/scenarios/gcra';
import { type AlgorithmCases, limitArbitrary, windowArbitrary } from '../table';

/** gcra: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const gcraCases: AlgorithmCases = {
  kind: 'gcra',
  arbitrary: fc
    .record({
      limit: limitArbitrary(1, 7),
      window: windowArbitrary,
      burst: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
    })
    // Rates whose whole-µs interval would be > 1 % slower are refused at construction.
    .filter(({ limit, window }) => {
      try {
        gcra({ limit, window });
        return true;
      } catch {
        return false;
      }
    })
    .map(({ burst, ...o }) => gcra(burst === undefined ? o : { ...o, burst })),
  scenarios: gcraScenarios,
};
