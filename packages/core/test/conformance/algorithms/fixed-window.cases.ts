import fc from 'fast-check';
import { fixedWindow } from '../../../src/index';
import { fixedWindowScenarios } from '../../../src/testing/scenarios/fixed-window';
import { type AlgorithmCases, limitArbitrary, windowArbitrary } from '../table';

/** fixedWindow: its scenarios (src/testing/scenarios) and random policies for the differential test. */
export const fixedWindowCases: AlgorithmCases = {
  kind: 'fixed-window',
  arbitrary: fc
    .record({
      // Small limits deny; huge ones take the unpacked layout (the count at a key named after
      // the window), as do small limits over windows of a few µs.
      limit: fc.oneof(
        { weight: 5, arbitrary: limitArbitrary(1, 6) },
        { weight: 1, arbitrary: fc.integer({ min: 1e8, max: 1e13 }) },
      ),
      window: windowArbitrary,
      anchor: fc.constantFrom('clock' as const, 'first-request' as const, undefined),
      extendWindow: fc.constantFrom(undefined, undefined, 'on-denial' as const, 'on-hit' as const),
    })
    .map(({ anchor, extendWindow, ...o }) =>
      fixedWindow(
        extendWindow !== undefined
          ? { ...o, extendWindow }
          : anchor === undefined
            ? o
            : { ...o, anchor },
      ),
    ),
  scenarios: fixedWindowScenarios,
};
