import fc from 'fast-check';
import { fixedWindow } from '../../../src/index';
import { type AlgorithmCases, windowArbitrary } from '../table';

export const fixedWindowCases: AlgorithmCases = {
  kind: 'fixed-window',
  arbitrary: fc
    .record({
      // Small limits deny; huge ones take the unpacked layout (the count at a key named after
      // the window), as do small limits over windows of a few µs.
      limit: fc.oneof(
        { weight: 5, arbitrary: fc.integer({ min: 1, max: 6 }) },
        { weight: 1, arbitrary: fc.integer({ min: 1e8, max: 1e13 }) },
      ),
      window: windowArbitrary,
    })
    .map((o) => fixedWindow(o)),
  scenarios: [
    {
      name: 'fixed window: limit per aligned window, denial until the window ends',
      policies: () => [fixedWindow({ limit: 3, window: '1s' })],
      steps: [
        {
          at: 0,
          expect: { allowed: true, limit: 3, remaining: 2, resetAfter: 1000, retryAfter: 0 },
        },
        { at: 100, expect: { allowed: true, remaining: 1, resetAfter: 900 } },
        { at: 200, expect: { allowed: true, remaining: 0, resetAfter: 800 } },
        { at: 300, expect: { allowed: false, remaining: 0, resetAfter: 700, retryAfter: 700 } },
        { at: 999.999, expect: { allowed: false, retryAfter: 0.001 } },
        { at: 1000, expect: { allowed: true, remaining: 2, resetAfter: 1000 } },
      ],
    },
    {
      name: 'fixed window: up to 2x limit across a window edge (the documented weakness)',
      policies: () => [fixedWindow({ limit: 3, window: '1s' })],
      steps: [
        { at: 999, times: 3, expect: { allowed: true } },
        { at: 999, expect: { allowed: false, retryAfter: 1 } },
        { at: 1000, times: 3, expect: { allowed: true } },
        { at: 1000, expect: { allowed: false, retryAfter: 1000 } },
      ],
    },
    {
      name: 'fixed window: cost, cost above capacity (-1), cost 0 read, peek writes nothing',
      policies: () => [fixedWindow({ limit: 5, window: '1m' })],
      steps: [
        { at: 0, cost: 0, expect: { allowed: true, remaining: 5, resetAfter: 0, retryAfter: 0 } },
        { at: 0, cost: 3, expect: { allowed: true, remaining: 2, resetAfter: 60_000 } },
        { at: 10, cost: 6, expect: { allowed: false, remaining: 2, retryAfter: -1 } },
        { at: 10, op: 'peek', cost: 2, expect: { allowed: true, remaining: 0 } },
        {
          at: 10,
          op: 'peek',
          cost: 3,
          expect: { allowed: false, remaining: 2, retryAfter: 59_990 },
        },
        { at: 10, cost: 0, expect: { allowed: true, remaining: 2, resetAfter: 59_990 } },
        { at: 20, cost: 3, expect: { allowed: false, remaining: 2 } },
        { at: 20, cost: 2, expect: { allowed: true, remaining: 0 } },
        { at: 30, op: 'reset' },
        { at: 30, expect: { allowed: true, remaining: 4 } },
      ],
    },
    {
      name: 'fixed window: keys are independent',
      policies: () => [fixedWindow({ limit: 1, window: '1s' })],
      steps: [
        { at: 0, key: 'a', expect: { allowed: true } },
        { at: 0, key: 'a', expect: { allowed: false } },
        { at: 0, key: 'b', expect: { allowed: true } },
        { at: 0, key: 'a:b', expect: { allowed: true } },
        { at: 0, key: 'a}b{', expect: { allowed: true } },
        { at: 0, key: 'a%7Db{', expect: { allowed: true } },
      ],
    },
  ],
};
