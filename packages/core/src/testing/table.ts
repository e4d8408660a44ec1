/**
 * The conformance table's shape and runner: scenarios on a fake clock, each a list of calls
 * with the decision fields they must return, run against any store. Plain results (no test
 * runner imported): `runScenario` answers the mismatches, `describeConformance` registers one
 * test per scenario with the runner functions it is given.
 */
import { type Decision, toDecision } from '../decision.js';
import type { Duration } from '../duration.js';
import type { Carry, LimitOverride } from '../live-limits.js';
import type { Policy } from '../policy.js';
import { RateLimiter } from '../rate-limiter.js';
import type { Reservation } from '../reservation.js';
import type { PreparedPolicies, Store } from '../stores/store.js';

/** A day boundary: every window length used in the table is aligned to it. */
export const T0 = 1_699_977_600_000;

/**
 * The `timeout` of the limiters the kit runs (ms). The kit checks answers, not latency (timing
 * claims belong in benchmarks). Under the limiter's default of 1 s, a store that is only slow
 * would be answered by the failure policy, and fail a step it answers right: a CI runner shares
 * two cores among test workers and a local cluster's six servers, and a live limiter's first
 * call waits for three round trips (the global record's GET, then EVALSHA and, after a script
 * flush, EVAL). A store that does not answer still fails the step, with the reason shown.
 */
export const KIT_TIMEOUT_MS = 10_000;

/** The reasons of a decision the failure policy made (failure-policy.ts), not the store. */
const FAILURE_REASONS: ReadonlySet<unknown> = new Set([
  'timeout',
  'store-error',
  'circuit-open',
  'fallback',
]);

/** The decision fields a step expects; only the fields given are compared. */
export interface Expectation {
  allowed?: boolean;
  limit?: number;
  remaining?: number;
  resetAfter?: number;
  retryAfter?: number;
  delay?: number;
  policy?: string;
  reason?: string;
  /** For `take`: the units the lease take granted. */
  granted?: number;
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

/** One call of a scenario. */
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
    | 'penalize'
    /** `limiter.set(key, { used: cost })`. */
    | 'set'
    /** `limiter.setLimit(key, override, { carry, ttl })` (a limiter with live limits). */
    | 'setLimit'
    /** `limiter.clearLimit(key, { carry })`. */
    | 'clearLimit'
    /**
     * A lease take of up to `cost` units straight to the store (its prepared policies' `take`,
     * docs/algorithms.md#quota-leases): the decision, with `granted`.
     */
    | 'take';
  /** For `setLimit`: the override(s). */
  override?: LimitOverride | LimitOverride[];
  /** For `setLimit` and `clearLimit`. @default 'as-is' (not passed) */
  carry?: Carry;
  /** For `setLimit`: when the override lapses. */
  ttl?: Duration;
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

/** A named list of steps against a limiter of `policies()`. */
export interface Scenario {
  name: string;
  policies: () => Policy[];
  steps: Step[];
  /** The limiter has live limits (`setLimit` steps). @default false */
  liveLimits?: boolean;
}

/** A clock the table moves: `clock()` answers `now`. */
export interface FakeClock {
  now: number;
  clock: () => number;
}

/** A FakeClock at `start` (default T0). */
export function fakeClock(start = T0): FakeClock {
  const c: FakeClock = { now: start, clock: () => c.now };
  return c;
}

/** Builds the store under test on the clock the scenario moves. */
export type StoreFactory = (clock: () => number) => Store | Promise<Store>;

/** The fields of `decision` named by `expectation`, in its order. */
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
  // A decision the failure policy made is never the store's answer: shown (and so a mismatch)
  // even where the step does not name a reason.
  const reason = decision.reason;
  if (!('reason' in expectation) && FAILURE_REASONS.has(reason)) out.reason = reason;
  return out;
}

/** A step whose decision differed from what it expects. */
export interface Mismatch {
  /** e.g. `step 3 (at 300ms, call 2)`. */
  readonly where: string;
  readonly expected: Record<string, unknown>;
  /** The same fields of the decision the store gave. */
  readonly actual: Record<string, unknown>;
}

/** How `runScenario` issues calls. */
export interface RunOptions {
  /**
   * `'at once'` makes every call of a scenario before awaiting any (the clock still set per
   * step; resets and the like apart), so that a batching store decides them together; the
   * answers must be those of calls made one by one. @default 'one by one'
   */
  issue?: 'one by one' | 'at once';
  /** The limiter's key prefix (a shared store needs one per scenario run). @default unique */
  prefix?: string;
}

let run = 0;

/** A reserve, settle, cancel, penalize or set step (settle's `cost` is the actual cost). */
function reservationStep(
  limiter: RateLimiter,
  reservations: Map<string, Reservation>,
  key: string,
  step: Step,
): Promise<Decision> {
  const name = step.reservation ?? 'r';
  const cost = step.cost ?? 1;
  if (step.op === 'penalize') return limiter.penalize(key, { cost });
  if (step.op === 'set') return limiter.set(key, { used: cost });
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

/** A setLimit or clearLimit step. */
function limitStep(limiter: RateLimiter, key: string, step: Step): Promise<void> {
  const options = {
    ...(step.carry === undefined ? {} : { carry: step.carry }),
    ...(step.ttl === undefined || step.op === 'clearLimit' ? {} : { ttl: step.ttl }),
  };
  if (step.op === 'clearLimit') return limiter.clearLimit(key, options);
  if (step.override === undefined) throw new Error('a setLimit step needs its override');
  return limiter.setLimit(key, step.override, options);
}

/** A `take` step: the store's lease take for `limiter`'s policies, as a decision with `granted`. */
async function takeStep(
  limiter: RateLimiter,
  prepared: PreparedPolicies,
  key: string,
  want: number,
): Promise<Decision> {
  if (prepared.take === undefined)
    throw new Error(`the ${limiter.store.kind} store cannot take leases`);
  const taken = await prepared.take(limiter.storageKeys(key), want);
  return { ...toDecision(taken, limiter.policies), granted: taken.granted } as Decision;
}

/** Runs one scenario against a store `factory` builds; answers the steps that differed. */
export async function runScenario(
  scenario: Scenario,
  factory: StoreFactory,
  options: RunOptions = {},
): Promise<Mismatch[]> {
  const time = fakeClock();
  const store = await factory(time.clock);
  const limiter = new RateLimiter({
    store,
    policies: scenario.policies(),
    prefix: options.prefix ?? `conf${process.pid}x${run++}`,
    timeout: KIT_TIMEOUT_MS,
    ...(scenario.liveLimits ? { liveLimits: true } : {}),
  });
  try {
    return await runSteps(scenario, store, limiter, time, options);
  } finally {
    // A live limiter polls its record for every key until closed: no poll outlives the run.
    await limiter.close();
  }
}

/** The steps of `scenario`, made on `limiter` at the fake clock's times; the steps that differed. */
async function runSteps(
  scenario: Scenario,
  store: Store,
  limiter: RateLimiter,
  time: FakeClock,
  options: RunOptions,
): Promise<Mismatch[]> {
  // The limiter's policies prepared once more, for `take` steps (the same storage keys).
  let prepared: PreparedPolicies | undefined;
  const calls: Array<{ where: string; expect: Expectation; decision: Promise<Decision> }> = [];
  const reservations = new Map<string, Reservation>();
  for (const [index, step] of scenario.steps.entries()) {
    time.now = T0 + step.at;
    const key = step.key ?? 'user';
    const cost = step.cost === undefined ? undefined : { cost: step.cost };
    for (let i = 0; i < (step.times ?? 1); i++) {
      const where = `step ${index} (at ${step.at}ms${step.times ? `, call ${i + 1}` : ''})`;
      if (step.op !== undefined && step.op !== 'consume' && step.op !== 'peek') {
        // reset, refund, block, unblock and the reservation steps reach the store after an
        // await: calls made in their tick could overtake them, so they wait for the calls
        // before them, and later ones wait.
        await Promise.all(calls.map((c) => c.decision));
        if (step.op === 'reset') await limiter.reset(key);
        else if (step.op === 'block') await limiter.block(key, step.duration ?? 'forever');
        else if (step.op === 'unblock') await limiter.unblock(key);
        else if (step.op === 'setLimit' || step.op === 'clearLimit')
          await limitStep(limiter, key, step);
        else {
          prepared ??= step.op === 'take' ? store.prepare(limiter.policies) : undefined;
          const decision =
            step.op === 'refund'
              ? await limiter.refund(key, cost)
              : step.op === 'take'
                ? await takeStep(limiter, prepared!, key, step.cost ?? 1)
                : await reservationStep(limiter, reservations, key, step);
          calls.push({ where, expect: step.expect ?? {}, decision: Promise.resolve(decision) });
        }
        continue;
      }
      const decision = step.op === 'peek' ? limiter.peek(key, cost) : limiter.consume(key, cost);
      calls.push({ where, expect: step.expect ?? {}, decision });
      if (options.issue !== 'at once') await decision;
    }
  }
  const mismatches: Mismatch[] = [];
  for (const { where, expect, decision } of calls) {
    const actual = pick(await decision, expect);
    if (JSON.stringify(actual) !== JSON.stringify(expect)) {
      mismatches.push({ where, expected: { ...expect }, actual });
    }
  }
  return mismatches;
}

/** The part of a test runner `describeConformance` uses (jest, vitest, mocha + chai…). */
export interface TestRunner {
  describe(name: string, body: () => void): void;
  it(name: string, body: () => Promise<void>): void;
  /** Fails the test when `mismatches` is not empty (e.g. `expect(m).toEqual([])`). */
  assertNone(mismatches: readonly Mismatch[]): void;
}

/** Registers one test per scenario against the store `factory` builds. */
export function describeConformance(
  runner: TestRunner,
  label: string,
  scenarios: readonly Scenario[],
  factory: StoreFactory,
  options: RunOptions = {},
): void {
  runner.describe(`conformance: ${label}`, () => {
    for (const scenario of scenarios) {
      runner.it(scenario.name, async () => {
        runner.assertNone(await runScenario(scenario, factory, options));
      });
    }
  });
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
