/** The conformance scenarios of gcra (docs/algorithms.md). */
import { gcra } from '../../index.js';
import { limitZeroScenario, type Scenario } from '../table.js';

/** gcra scenarios of the conformance table. */
export const gcraScenarios: Scenario[] = [
  {
    name: 'gcra: capacity exactly burst, then one request per emission interval',
    policies: () => [gcra({ limit: 10, window: '1s', burst: 2 })],
    steps: [
      { at: 0, expect: { allowed: true, limit: 2, remaining: 1, resetAfter: 100 } },
      { at: 0, expect: { allowed: true, remaining: 0, resetAfter: 200 } },
      { at: 0, expect: { allowed: false, remaining: 0, resetAfter: 200, retryAfter: 100 } },
      { at: 50, expect: { allowed: false, retryAfter: 50 } },
      { at: 100, expect: { allowed: true, remaining: 0, resetAfter: 200 } },
      { at: 100, cost: 3, expect: { allowed: false, retryAfter: -1 } },
      { at: 1000, expect: { allowed: true, remaining: 1, resetAfter: 100 } },
    ],
  },
  {
    name: 'gcra: burst defaults to limit; a denied request takes nothing',
    policies: () => [gcra({ limit: 4, window: '4s' })],
    steps: [
      { at: 0, cost: 4, expect: { allowed: true, remaining: 0, resetAfter: 4000 } },
      { at: 500, times: 5, expect: { allowed: false, retryAfter: 500 } },
      { at: 1000, expect: { allowed: true, remaining: 0 } },
      { at: 1000, cost: 0, expect: { allowed: true, remaining: 0, resetAfter: 4000 } },
      { at: 1000, op: 'reset' },
      { at: 1000, op: 'peek', cost: 4, expect: { allowed: true, remaining: 0 } },
    ],
  },
  limitZeroScenario('gcra', () => gcra({ limit: 0, window: '1s', burst: 5, blockDuration: '1m' })),
];
