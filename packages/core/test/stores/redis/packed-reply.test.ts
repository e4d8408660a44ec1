/**
 * The reply of several policies (lua/include/engine.lua): { admitted + 4 · packed_mask, then per
 * policy its packed value (bit set) or its five fields }, read by redisStore with each
 * algorithm's `unpack`. The decisions themselves are compared with the memory twin by the
 * conformance and differential suites; this pins the shape, so a change that falls back to the
 * (costlier) fields for every call fails here.
 */
import { useTestRedis } from '../../../../../test/harness/redis';
import { fixedWindow, gcra, type Policy, tokenBucket } from '../../../src/index';
import { combinedScriptFor, scriptFor } from '../../../src/stores/scripts';
import { T0 } from './redis-state';

const testRedis = useTestRedis();

/** One consume of cost `cost` at T0 (µs clock), raw: the script's reply as Redis gives it. */
function consume(policies: Policy[], combined: boolean, cost = 1): Promise<unknown> {
  const kinds = policies.map((p) => p.kind);
  const script = combined ? combinedScriptFor(kinds) : scriptFor(kinds);
  const args = ['0', String(T0 * 1000), String(cost), '0'];
  for (const p of policies) args.push(p.kind, ...p.params.map((v) => String(v)));
  for (const _ of policies) args.push('');
  const keys = combined
    ? ['pr:{u}:state', 'pr:{u}:block']
    : [...policies.map((_, i) => `pr:{u}:${i}`), 'pr:{u}:block'];
  return testRedis().eval(script.source, keys.length, ...keys, ...args);
}

const packing = () => [fixedWindow({ limit: 2, window: '1m' }), gcra({ limit: 5, window: '1s' })];

describe.each([true, false])('combined %s', (combined) => {
  test('fixedWindow + gcra answer admitted and one integer per policy', async () => {
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push(await consume(packing(), combined));
    // Admitted twice, then fixedWindow denies (negative) while gcra, described as it stands,
    // still admits (≥ 0). Both packed: mask 0b11.
    expect(replies.map((r) => (r as number[]).length)).toEqual([3, 3, 3]);
    expect(replies.map((r) => (r as number[])[0])).toEqual([1 + 12, 1 + 12, 12]);
    const [, fw, g] = replies[2] as number[];
    expect(fw).toBeLessThan(0);
    expect(g).toBeGreaterThanOrEqual(0);
  });

  test('a policy without a packed value sends its five fields, the others one integer', async () => {
    // fixedWindow 1h at 10 million: window · (limit + 1) ≥ 2^53, no packed value.
    const policies = [
      gcra({ limit: 5, window: '1s' }),
      tokenBucket({ limit: 5, window: '1s' }),
      fixedWindow({ limit: 10_000_000, window: '1h' }),
      fixedWindow({ limit: 2, window: '1m' }),
    ];
    const reply = (await consume(policies, combined)) as number[];
    expect(reply[0]).toBe(1 + 4 * 0b1001);
    expect(reply).toHaveLength(1 + 1 + 5 + 5 + 1);
  });
});
