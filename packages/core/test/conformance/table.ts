/**
 * The conformance table for this repository's tests: the published kit's scenarios and runner
 * (src/testing, `@floodgate/core/testing`) with jest, and the random policies (fast-check) the
 * differential test draws from.
 */
import fc from 'fast-check';
import type { Policy } from '../../src/index';
import {
  describeConformance as describeWith,
  type Scenario,
  type StoreFactory,
} from '../../src/testing/table';

export {
  type Expectation,
  type FakeClock,
  fakeClock,
  limitZeroScenario,
  pick,
  type Scenario,
  type Step,
  type StoreFactory,
  T0,
} from '../../src/testing/table';

/** What each algorithm contributes: its reference scenarios and random policies for the differential test. */
export interface AlgorithmCases {
  kind: string;
  scenarios: Scenario[];
  /** Random valid policies of this kind, kept small so random traces reach every branch. */
  arbitrary: fc.Arbitrary<Policy>;
}

/**
 * Registers one jest test per scenario against the store `factory` builds. `issue: 'at once'`
 * makes every call of a scenario before awaiting any (the clock still set per step; resets
 * apart), so that a batching store decides them together; the answers must be those of calls
 * made one by one.
 */
export function describeConformance(
  label: string,
  scenarios: readonly Scenario[],
  factory: StoreFactory,
  issue: 'one by one' | 'at once' = 'one by one',
): void {
  describeWith(
    {
      describe,
      it: test,
      // The first step that differed, with its place, as a readable diff.
      assertNone: (mismatches) => {
        const first = mismatches[0];
        if (first) {
          expect({ where: first.where, ...first.actual }).toEqual({
            where: first.where,
            ...first.expected,
          });
        }
      },
    },
    label,
    scenarios,
    factory,
    { issue },
  );
}

/**
 * Random windows: whole milliseconds, or a few microseconds so that rounding edges (an
 * emission interval of 3 µs, a remainder of interval − 1) come up often in random traces.
 */
export const windowArbitrary: fc.Arbitrary<number | `${number}us`> = fc.oneof(
  fc.integer({ min: 1, max: 3000 }),
  fc.integer({ min: 1, max: 5000 }).map((n) => `${n}us` as const),
);

/**
 * Random limits from `min` to `max`, and now and then 0 (a policy that admits nothing), so that
 * limit 0 meets every other parameter, lockouts and mixed limiters in the differential test.
 */
export function limitArbitrary(min: number, max: number): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: 9, arbitrary: fc.integer({ min, max }) },
    { weight: 1, arbitrary: fc.constant(0) },
  );
}
