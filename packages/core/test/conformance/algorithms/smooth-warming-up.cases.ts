import fc from 'fast-check';
import { smoothWarmingUp } from '../../../src/index';
import { smoothWarmingUpScenarios } from '../../../src/testing/scenarios/smooth-warming-up';
import { type AlgorithmCases, limitArbitrary, windowArbitrary } from '../table';

/** smoothWarmingUp: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const smoothWarmingUpCases: AlgorithmCases = {
  kind: 'smooth-warming-up',
  arbitrary: fc
    .record({
      limit: limitArbitrary(1, 7),
      window: windowArbitrary,
      // Long warm-ups make the trapezoid's product pass 2^52 (mul_div's long path).
      warmup: fc.oneof(windowArbitrary, fc.constantFrom('12h', '1d', '3d')),
      coldFactor: fc.option(
        fc.oneof(
          fc.constant(1),
          fc.integer({ min: 1, max: 12 }),
          fc.constant(2.5),
          fc.constant(1.25),
        ),
        { nil: undefined },
      ),
    })
    .map(({ coldFactor, ...o }) =>
      smoothWarmingUp(coldFactor === undefined ? o : { ...o, coldFactor }),
    ),
  scenarios: smoothWarmingUpScenarios,
};
