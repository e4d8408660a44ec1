import fc from 'fast-check';
import { slidingLog } from '../../../src/index';
import { slidingLogScenarios } from '../../../src/testing/scenarios/sliding-log';
import { type AlgorithmCases, limitArbitrary, windowArbitrary } from '../table';

/** slidingLog: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const slidingLogCases: AlgorithmCases = {
  kind: 'sliding-log',
  arbitrary: fc
    .record({ limit: limitArbitrary(1, 6), window: windowArbitrary })
    .map((o) => slidingLog(o)),
  scenarios: slidingLogScenarios,
};
