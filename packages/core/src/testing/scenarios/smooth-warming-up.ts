/** The conformance scenarios of smoothWarmingUp (docs/algorithms.md). */
import { smoothWarmingUp } from '../../index.js';
import { limitZeroScenario, type Scenario } from '../table.js';
import { guavaAcquires } from './smooth-bursty.js';

/** Guava testWarmUp (2/s, 4 s warm-up, cold factor 3): R1.38, R1.13, R0.88, R0.63, R0.50… */
const COLD_2_PER_S = [1375, 1125, 875, 625, 500, 500, 500];
/** Guava testWarmUpWithColdFactor (5/s, 4 s, 10): R1.75, R1.26, R0.76, R0.30, R0.20… (exact µs) */
const COLD_5_PER_S_FACTOR_10 = [1752.5, 1257.5, 762.5, 300.228, 200, 200, 200];

/** smoothWarmingUp scenarios of the conformance table. */
export const smoothWarmingUpScenarios: Scenario[] = [
  {
    name: 'smooth warming up: cold, warm after saturated use, cold again after warmup + repay (Guava testWarmUp)',
    policies: () => [smoothWarmingUp({ limit: 2, window: '1s', warmup: '4s' })],
    steps: [
      { at: 0, cost: 0, expect: { allowed: true, limit: 2, remaining: 1, resetAfter: 0 } },
      // #1: the 8 acquires end with the next free at 6000.
      ...guavaAcquires(0, COLD_2_PER_S),
      // #2, #3: repay (500 ms) then 4 s idle: cold again, same waits.
      ...guavaAcquires(10_000, COLD_2_PER_S),
      // #5, #6: repay then only 2 s idle: half way, at the threshold — warm.
      ...guavaAcquires(18_000, [500, 500, 500, 500, 500, 500, 500]),
    ],
  },
  {
    name: 'smooth warming up: cold factor 10 (Guava testWarmUpWithColdFactor)',
    policies: () => [smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', coldFactor: 10 })],
    steps: [
      ...guavaAcquires(0, COLD_5_PER_S_FACTOR_10),
      // Repay 200 ms, then 1 s idle: still warm (Guava #5–#7).
      ...guavaAcquires(4672.728 + 1000, [200, 200, 200]),
    ],
  },
  {
    name: 'smooth warming up: cold factor 1 is a plain stable rate (Guava testWarmUpWithColdFactor1)',
    policies: () => [smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', coldFactor: 1 })],
    steps: [...guavaAcquires(0, [200, 200, 200, 200]), ...guavaAcquires(1340, [200, 200])],
  },
  {
    // 1/s, 1 day warm-up: threshold 43 200 permits, 43 200 more above it up to maxPermits.
    name: 'smooth warming up: the trapezoid is exact for long warm-ups (products beyond 2^53)',
    policies: () => [smoothWarmingUp({ limit: 1, window: '1s', warmup: '1d' })],
    steps: [
      // Every permit above the threshold: the whole trapezoid, exactly `warmup`.
      { at: 0, key: 'a', cost: 43_200, expect: { allowed: true } },
      { at: 0, key: 'a', expect: { allowed: false, retryAfter: 86_400_000 } },
      // Half of them: 21 600 s of stable time + (43 200² − 21 600²) / 43 200 s = 54 000 s.
      { at: 0, key: 'b', cost: 21_600, expect: { allowed: true } },
      { at: 0, key: 'b', expect: { allowed: false, retryAfter: 54_000_000 } },
    ],
  },
  {
    name: 'smooth warming up: any cost is admitted at once, never −1; cost 0 and peek write nothing',
    policies: () => [smoothWarmingUp({ limit: 1, window: '1s', warmup: '2s' })],
    steps: [
      { at: 0, op: 'peek', cost: 100, expect: { allowed: true, retryAfter: 0 } },
      // Cold: a 2 s warm-up at 1/s stores 2 permits, 1 below the threshold (1 s) and 1 above
      // (the trapezoid: 2 s); taking 100 also pays 98 fresh permits (98 s).
      { at: 0, cost: 100, expect: { allowed: true, remaining: 0 } },
      { at: 0, expect: { allowed: false, retryAfter: 101_000 } },
      { at: 0, cost: 0, expect: { allowed: true, remaining: 0 } },
      { at: 0, op: 'reset' },
      { at: 0, cost: 0, expect: { allowed: true, remaining: 1, resetAfter: 0 } },
    ],
  },
  limitZeroScenario('smooth warming up', () =>
    smoothWarmingUp({ limit: 0, window: '1s', warmup: '10s', blockDuration: '1m' }),
  ),
];
