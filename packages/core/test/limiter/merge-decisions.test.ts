/** Several limiters' decisions as one: the policy that decides follows the rule of one limiter. */
import type { Decision, PolicyDecision } from '../../src/decision';
import { mergeDecisions } from '../../src/http/index';

/** A one-policy decision named `name`. */
function decision(name: string, fields: Partial<PolicyDecision>): Decision {
  const view: PolicyDecision = {
    name,
    allowed: true,
    limit: 10,
    quota: 10,
    remaining: 5,
    resetAfter: 1000,
    retryAfter: 0,
    delay: 0,
    window: 1000,
    ...fields,
  };
  const { name: policy, ...rest } = view;
  return { ...rest, policy, policies: [view] };
}

describe('mergeDecisions', () => {
  it('admits when all admit; the least remaining decides, then the longest resetAfter', () => {
    const merged = mergeDecisions([
      decision('a', { remaining: 3, resetAfter: 500 }),
      decision('b', { remaining: 1, resetAfter: 200 }),
      decision('c', { remaining: 1, resetAfter: 900, delay: 40 }),
    ]);
    expect(merged).toMatchObject({ allowed: true, policy: 'c', remaining: 1, retryAfter: 0 });
    expect(merged.delay).toBe(40);
    expect(merged.policies.map((p) => p.name)).toEqual(['a', 'b', 'c']);
  });

  it('denies when any denies: the denial that waits longest decides, −1 longest of all', () => {
    const waits = mergeDecisions([
      decision('a', { allowed: true, remaining: 0 }),
      decision('b', { allowed: false, remaining: 0, retryAfter: 300 }),
      decision('c', { allowed: false, remaining: 0, retryAfter: 700 }),
    ]);
    expect(waits).toMatchObject({ allowed: false, policy: 'c', retryAfter: 700, delay: 0 });
    const never = mergeDecisions([
      decision('a', { allowed: false, retryAfter: 900 }),
      decision('b', { allowed: false, retryAfter: -1 }),
      decision('c', { allowed: false, retryAfter: 5000 }),
    ]);
    expect(never).toMatchObject({ allowed: false, policy: 'b', retryAfter: -1 });
  });

  it('keeps the first reason given', () => {
    const merged = mergeDecisions([
      decision('a', {}),
      { ...decision('b', { allowed: false, retryAfter: 10 }), allowed: false, reason: 'blocked' },
    ]);
    expect(merged).toMatchObject({ allowed: false, reason: 'blocked', policy: 'b' });
  });
});
