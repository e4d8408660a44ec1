/**
 * The conformance table: scenarios on a fake clock, each a list of calls with the decision
 * fields they must return. `describeConformance` runs every scenario against one store, so
 * the memory store, the Redis store and every client/cluster variant face the same table.
 */
import fc from 'fast-check';
import {
  type Decision,
  type Duration,
  type Policy,
  RateLimiter,
  type Reservation,
  type Store,
} from '../../src/index';

/** A day boundary: every window length used in the table is aligned to it. */
export const T0 = 1_699_977_600_000;

export interface Expectation {
  allowed?: boolean;
  limit?: number;
  remaining?: number;
  resetAfter?: number;
  retryAfter?: number;
  delay?: number;
  policy?: string;
  reason?: string;
  /** Per-policy fields, by index; only the fields given are compared. */
  policies?: Array<
    Partial<
      Record<
        'name' | 'allowed' | 'remaining' | 'resetAfter' | 'retryAfter' | 'delay' | 'limit',
        unknown
      >
    >
  >;
}

export interface Step {
  /** Milliseconds after T0 (fractions allowed); steps run in order. */
  at: number;
  /**
   * `refund` gives back `cost` and answers the decision as it then stands; `block` blocks the
   * key for `duration`; `unblock` lifts it. @default 'consume'
   */
  op?:
    | 'consume'
    | 'peek'
    | 'reset'
    | 'refund'
    | 'block'
    | 'unblock'
    /** `limiter.reserve(key, { cost })`, kept as `reservation` for a later settle or cancel. */
    | 'reserve'
    /** `settle(cost)` of the reservation named `reservation`. */
    | 'settle'
    /** `cancel()` of the reservation named `reservation`. */
    | 'cancel'
    /** `limiter.penalize(key, { cost })`. */
    | 'penalize';
  /** For `reserve`, `settle` and `cancel`: which reservation. @default 'r' */
  reservation?: string;
  /** For `block`. */
  duration?: Duration | 'forever';
  /** @default 'user' */
  key?: string;
  /** @default 1 (omitted from the call) */
  cost?: number;
  /** Run the same call this many times, each expected to match. @default 1 */
  times?: number;
  expect?: Expectation;
}

export interface Scenario {
  name: string;
  policies: () => Policy[];
  steps: Step[];
}

/** What each algorithm contributes: its reference scenarios and random policies for the differential test. */
export interface AlgorithmCases {
  kind: string;
  scenarios: Scenario[];
  /** Random valid policies of this kind, kept small so random traces reach every branch. */
  arbitrary: fc.Arbitrary<Policy>;
}

export interface FakeClock {
  now: number;
  clock: () => number;
}

export function fakeClock(start = T0): FakeClock {
  const c: FakeClock = { now: start, clock: () => c.now };
  return c;
}

export type StoreFactory = (clock: () => number) => Store | Promise<Store>;

/** The fields of `decision` named by `expectation`, for a readable toEqual. */
export function pick(decision: Decision, expectation: Expectation): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of Object.keys(expectation) as Array<keyof Expectation>) {
    if (field === 'policies') {
      out.policies = expectation.policies!.map((want, i) => {
        const got = decision.policies[i] as unknown as Record<string, unknown> | undefined;
        const view: Record<string, unknown> = {};
        for (const f of Object.keys(want)) view[f] = got?.[f];
        return view;
      });
    } else {
      out[field] = (decision as unknown as Record<string, unknown>)[field];
    }
  }
  return out;
}

let run = 0;

/** A reserve, settle, cancel or penalize step (settle's `cost` is the actual cost). */
function reservationStep(
  limiter: RateLimiter,
  reservations: Map<string, Reservation>,
  key: string,
  step: Step,
): Promise<Decision> {
  const name = step.reservation ?? 'r';
  const cost = step.cost ?? 1;
  if (step.op === 'penalize') return limiter.penalize(key, { cost });
  if (step.op === 'reserve') {
    return limiter.reserve(key, { cost }).then((r) => {
      reservations.set(name, r);
      return r;
    });
  }
  const r = reservations.get(name);
  if (r === undefined) throw new Error(`no reservation ${name} to ${step.op}`);
  return step.op === 'settle' ? r.settle(cost) : r.cancel();
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
  describe(`conformance: ${label}`, () => {
    test.each(scenarios.map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
      const time = fakeClock();
      const limiter = new RateLimiter({
        store: await factory(time.clock),
        policies: scenario.policies(),
        prefix: `conf${process.pid}x${run++}`,
      });
      const calls: Array<{ where: string; expect: Expectation; decision: Promise<Decision> }> = [];
      const reservations = new Map<string, Reservation>();
      for (const [index, step] of scenario.steps.entries()) {
        time.now = T0 + step.at;
        const key = step.key ?? 'user';
        const options = step.cost === undefined ? undefined : { cost: step.cost };
        for (let i = 0; i < (step.times ?? 1); i++) {
          const where = `step ${index} (at ${step.at}ms${step.times ? `, call ${i + 1}` : ''})`;
          if (step.op !== undefined && step.op !== 'consume' && step.op !== 'peek') {
            // RateLimiter.reset, refund, block and unblock reach the store after an await:
            // calls made in their tick could overtake them, so they wait for the calls before
            // them and those after wait for them.
            await Promise.all(calls.map((c) => c.decision));
            if (step.op === 'reset') await limiter.reset(key);
            else if (step.op === 'block') await limiter.block(key, step.duration ?? 'forever');
            else if (step.op === 'unblock') await limiter.unblock(key);
            else if (step.op === 'refund') {
              const decision = await limiter.refund(key, options);
              calls.push({ where, expect: step.expect ?? {}, decision: Promise.resolve(decision) });
            } else {
              const decision = await reservationStep(limiter, reservations, key, step);
              calls.push({ where, expect: step.expect ?? {}, decision: Promise.resolve(decision) });
            }
            continue;
          }
          const decision =
            step.op === 'peek' ? limiter.peek(key, options) : limiter.consume(key, options);
          calls.push({ where, expect: step.expect ?? {}, decision });
          if (issue === 'one by one') await decision;
        }
      }
      for (const { where, expect: want, decision } of calls) {
        const got = await decision;
        expect({ where, ...pick(got, want) }).toEqual({ where, ...want });
      }
    });
  });
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

/**
 * `limit: 0` (docs/algorithms.md#limit-0), the same for every algorithm: cost 0 is an admitted
 * read, every cost > 0 is denied with retryAfter −1 (never admissible), so its lockout never
 * fires, nothing is written and a refund has nothing to give back. `policy` has a 1 m lockout.
 */
export function limitZeroScenario(algorithm: string, policy: () => Policy): Scenario {
  const read = { allowed: true, limit: 0, remaining: 0, resetAfter: 0, retryAfter: 0 };
  const never = { allowed: false, limit: 0, remaining: 0, resetAfter: 0, retryAfter: -1 };
  return {
    name: `${algorithm}: limit 0 admits nothing (retryAfter -1), cost 0 reads, no lockout, no state`,
    policies: () => [policy()],
    steps: [
      { at: 0, cost: 0, expect: read },
      { at: 0, expect: { ...never, reason: undefined } },
      { at: 0, cost: 7, times: 2, expect: never },
      { at: 10, op: 'peek', expect: never },
      { at: 10, op: 'peek', cost: 0, expect: read },
      { at: 20, op: 'refund', cost: 3, expect: read },
      // Not blocked: a denial of a cost the policy can never admit is no reason to lock out.
      { at: 30, cost: 0, expect: { ...read, reason: undefined } },
      { at: 5000, expect: never },
    ],
  };
}
