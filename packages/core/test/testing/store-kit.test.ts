/**
 * The store kit's worked example (docs/store-kit.md): a toy third-party store passes the
 * conformance table and the differential harness of `@floodgate/core/testing`, and a broken
 * one (its refunds give nothing back) is caught by both.
 */
import { fixedWindow, memoryStore, redisStore, type Store } from '@floodgate/core';
import {
  CONFORMANCE_SCENARIOS,
  describeConformance,
  runDifferential,
  runScenario,
  type Scenario,
} from '@floodgate/core/testing';
import { useTestRedis } from '../../../../test/harness/redis';

const redis = useTestRedis();

/**
 * A toy store "in another process": every call is asynchronous and goes through a serialised
 * copy of its arguments, as a network client would send them; the state lives in the twins.
 */
function toyStore(
  clock: () => number,
  options: { brokenRefund?: boolean; decideAfterMs?: number; decideFails?: boolean } = {},
): Store {
  const backend = memoryStore({ clock });
  const hop = <T>(value: T): Promise<T> =>
    new Promise((resolve) => setImmediate(() => resolve(JSON.parse(JSON.stringify(value)))));
  const slow = () => new Promise((resolve) => setTimeout(resolve, options.decideAfterMs ?? 0));
  return {
    kind: 'toy',
    prepare(policies) {
      const prepared = backend.prepare(policies);
      return {
        decide: async (keys, cost, peek) => {
          if (options.decideFails) throw new Error('the toy store is down');
          if (options.decideAfterMs !== undefined) await slow();
          return hop(await prepared.decide(await hop(keys), cost, peek));
        },
        reset: async (keys) => prepared.reset(await hop(keys)),
        refund: async (keys, cost) =>
          hop(await prepared.refund(await hop(keys), options.brokenRefund ? 0 : cost)),
        block: async (keys, micros) => prepared.block(await hop(keys), micros),
        unblock: async (keys) => prepared.unblock(await hop(keys)),
      };
    },
  };
}

describeConformance(
  { describe, it: test, assertNone: (mismatches) => expect(mismatches).toEqual([]) },
  'the toy store',
  CONFORMANCE_SCENARIOS,
  (clock) => toyStore(clock),
);

describe('the store kit', () => {
  test('the toy store agrees with the twins on random traces', async () => {
    const report = await runDifferential({ store: (clock) => toyStore(clock), runs: 40 });
    expect(report.failure).toBeUndefined();
    expect(report).toMatchObject({ runs: 40, decisions: 40 * 40 });
  });

  test('the Redis store (the Lua scripts) passes the same harness', async () => {
    const report = await runDifferential({
      store: (clock) => redisStore({ client: redis(), clock, batch: false }),
      runs: 40,
      seed: 7,
    });
    expect(report.failure).toBeUndefined();
  });

  test('catches a store whose refunds give nothing back', async () => {
    const broken = (clock: () => number) => toyStore(clock, { brokenRefund: true });
    const failing: string[] = [];
    for (const scenario of CONFORMANCE_SCENARIOS) {
      if ((await runScenario(scenario, broken)).length > 0) failing.push(scenario.name);
    }
    expect(failing.length).toBeGreaterThan(0);
    expect(failing.every((name) => /refund/i.test(name))).toBe(true);

    const report = await runDifferential({ store: broken, runs: 40 });
    expect(report.failure).toBeDefined();
    expect(report.failure!.trace.some((step) => step.op === 'refund')).toBe(true);
    // The same seed replays the same traces, so the failure is found at the same call.
    expect(await runDifferential({ store: broken, runs: 40 })).toEqual(report);
  });

  const twoSteps: Scenario = {
    name: 'two calls',
    policies: () => [fixedWindow({ limit: 5, window: '1m' })],
    steps: [{ at: 0, times: 2, expect: { allowed: true } }],
  };

  test("a store slower than a limiter's default timeout (1 s) is answered by itself, not the failure policy", async () => {
    const slow = (clock: () => number) => toyStore(clock, { decideAfterMs: 1200 });
    expect(await runScenario(twoSteps, slow)).toEqual([]);
  });

  test('a decision the failure policy made fails its step with the reason, an open circuit included', async () => {
    const down = (clock: () => number) => toyStore(clock, { decideFails: true });
    const sixCalls = { ...twoSteps, steps: [{ at: 0, times: 6, expect: { allowed: true } }] };
    const mismatches = await runScenario(sixCalls, down);
    // The limiter's default breaker opens after 5 failures in a row.
    expect(mismatches.map((m) => m.actual)).toEqual([
      ...Array.from({ length: 5 }, () => ({ allowed: true, reason: 'store-error' })),
      { allowed: true, reason: 'circuit-open' },
    ]);
  });
});
