/**
 * The differential harness of the store kit: random traces (time steps, keys, costs, peeks,
 * refunds, resets, blocks) over random policy sets, run against the store under test and
 * against the memory store's TypeScript twins, one call at a time; every decision must be
 * identical, field for field. A seeded generator (no test-runner or property-testing
 * dependency) makes a failing seed replay exactly.
 */
import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../algorithms/index.js';
import type { Decision } from '../decision.js';
import { RateLimitConfigError } from '../errors.js';
import { EVERY_KEY } from '../live-global.js';
import type { Carry, LimitOverride } from '../live-limits.js';
import type { BlockDuration, Policy } from '../policy.js';
import { RateLimiter } from '../rate-limiter.js';
import { memoryStore } from '../stores/memory.js';
import { fakeClock, KIT_TIMEOUT_MS, type StoreFactory, T0 } from './table.js';

/** One call of a random trace. */
export interface TraceStep {
  /** Microseconds the clock moves before the call. */
  readonly advance: number;
  readonly key: string;
  readonly cost: number;
  readonly op:
    | 'consume'
    | 'peek'
    | 'reset'
    | 'refund'
    | 'block'
    | 'unblock'
    | 'setLimit'
    | 'clearLimit';
  /** For `block`: ms, or for ever. */
  readonly duration: number | 'forever';
  /** For `setLimit` (traces with `liveLimits`): the override and its options. */
  readonly limit?: { override: LimitOverride; carry: Carry; ttl?: number };
  /** For `clearLimit`. */
  readonly carry?: Carry;
}

/** What `runDifferential` draws and how much. */
export interface DifferentialOptions {
  /** Builds the store under test on the clock the harness moves (one store per trace). */
  store: StoreFactory;
  /** Traces to run. @default 100 */
  runs?: number;
  /** Calls per trace. @default 40 */
  steps?: number;
  /** Seed of the generator: the same seed draws the same traces. @default 1 */
  seed?: number;
  /** Algorithms to draw policies from (their `kind`s). @default every algorithm */
  kinds?: readonly string[];
  /** Most policies per limiter (all-or-nothing across them). @default 3 */
  maxPolicies?: number;
  /**
   * Limiters with live limits, and traces that also change limits (setLimit with a random
   * override, carry and ttl; clearLimit), of one key or of every key ('*'). @default false
   */
  liveLimits?: boolean;
}

/** The first call on which the store under test and the twins disagreed. */
export interface DifferentialFailure {
  readonly seed: number;
  /** The trace's index (0-based) among `runs`. */
  readonly run: number;
  /** Each policy's kind and options (rebuild with its factory to replay). */
  readonly policies: ReadonlyArray<{ kind: string; options: Readonly<Record<string, unknown>> }>;
  /** The trace up to and including the call that differed. */
  readonly trace: readonly TraceStep[];
  /** What the twins answered (undefined for reset, block and unblock). */
  readonly expected: Decision | undefined;
  /** What the store under test answered. */
  readonly actual: Decision | undefined;
}

/** The outcome: how much ran, and the first disagreement if any. */
export interface DifferentialReport {
  readonly runs: number;
  readonly decisions: number;
  readonly failure?: DifferentialFailure;
}

/** Every algorithm's random policies (small limits and windows reach every branch). */
const DRAWS: Readonly<Record<string, (r: Random) => Policy>> = {
  'fixed-window': (r) =>
    fixedWindow({
      limit: r.limit(6),
      window: r.window(),
      ...r.pick([{}, { anchor: 'first-request' as const }, { extendWindow: 'on-denial' as const }]),
    }),
  'sliding-log': (r) => slidingLog({ limit: r.limit(6), window: r.window() }),
  'token-bucket': (r) => tokenBucket({ limit: r.limit(7), window: r.window(), burst: r.int(1, 8) }),
  gcra: (r) => gcra({ limit: r.limit(7), window: r.window(), burst: r.int(1, 8) }),
  'sliding-window': (r) => {
    const buckets = r.int(1, 6);
    return slidingWindow({ limit: r.limit(7), buckets, window: r.int(1, 600) * buckets });
  },
  'leaky-bucket': (r) =>
    leakyBucket({ limit: r.limit(7), window: r.window(), burst: r.int(0, 6), delay: r.int(0, 7) }),
  'smooth-bursty': (r) => smoothBursty({ limit: r.limit(7), window: r.window() }),
  'smooth-warming-up': (r) =>
    smoothWarmingUp({ limit: r.limit(7), window: r.window(), warmup: r.window() }),
};

/** Every algorithm kind the harness draws from. */
export const DIFFERENTIAL_KINDS: readonly string[] = Object.keys(DRAWS);

/**
 * Runs `runs` random traces against the store under test and the twins; resolves with the
 * first disagreement (and stops there), or none. Each trace gets a fresh store of each.
 */
export async function runDifferential(options: DifferentialOptions): Promise<DifferentialReport> {
  const runs = options.runs ?? 100;
  const seed = options.seed ?? 1;
  const kinds = options.kinds ?? DIFFERENTIAL_KINDS;
  const random = new Random(seed);
  let decisions = 0;
  for (let run = 0; run < runs; run++) {
    const policies = drawPolicies(random, kinds, options.maxPolicies ?? 3);
    const live = options.liveLimits === true;
    const trace = Array.from({ length: options.steps ?? 40 }, () =>
      live ? drawLiveStep(random, policies) : drawStep(random),
    );
    const time = fakeClock(T0 + (run % 7) * 123.456);
    const prefix = `kit${seed}x${run}`;
    const extra = live ? { liveLimits: true } : {};
    const twins = new RateLimiter({
      store: memoryStore({ clock: time.clock }),
      policies,
      prefix,
      ...extra,
    });
    const tested = new RateLimiter({
      store: await options.store(time.clock),
      policies,
      prefix,
      timeout: KIT_TIMEOUT_MS,
      ...extra,
    });
    try {
      for (const [i, step] of trace.entries()) {
        time.now += step.advance / 1000;
        const expected = await call(twins, step);
        const actual = await call(tested, step);
        decisions++;
        if (JSON.stringify(expected) !== JSON.stringify(actual)) {
          const described = policies.map((p) => ({ kind: p.kind, options: p.options }));
          const failure = { seed, run, policies: described, trace: trace.slice(0, i + 1) };
          return { runs: run + 1, decisions, failure: { ...failure, expected, actual } };
        }
      }
    } finally {
      // A live limiter polls its override for every key until closed: no read may outlive the
      // trace (the caller may close its connection right after).
      await Promise.all([twins.close(), tested.close()]);
    }
  }
  return { runs, decisions };
}

function call(limiter: RateLimiter, s: TraceStep): Promise<Decision | undefined> {
  if (s.op === 'setLimit' || s.op === 'clearLimit') return changeLimit(limiter, s);
  if (s.op === 'reset') return limiter.reset(s.key).then(() => undefined);
  if (s.op === 'block') return limiter.block(s.key, s.duration).then(() => undefined);
  if (s.op === 'unblock') return limiter.unblock(s.key).then(() => undefined);
  if (s.op === 'refund') return limiter.refund(s.key, { cost: s.cost });
  const options = { cost: s.cost };
  return s.op === 'peek' ? limiter.peek(s.key, options) : limiter.consume(s.key, options);
}

/**
 * A setLimit or clearLimit step, answered as a read of the key after it (so the change itself is
 * compared), or of getLimit('*') for a change of every key; an override a factory refuses
 * answers its error's field, for both alike.
 */
async function changeLimit(limiter: RateLimiter, s: TraceStep): Promise<Decision | undefined> {
  try {
    if (s.op === 'clearLimit') await limiter.clearLimit(s.key, { carry: s.carry! });
    else {
      const { override, carry, ttl } = s.limit!;
      await limiter.setLimit(s.key, override, { carry, ...(ttl === undefined ? {} : { ttl }) });
    }
  } catch (error) {
    if (!(error instanceof RateLimitConfigError)) throw error;
    return { refused: error.field } as unknown as Decision;
  }
  if (s.key === EVERY_KEY) return { every: await limiter.getLimit(s.key) } as unknown as Decision;
  return limiter.peek(s.key, { cost: 0 });
}

/**
 * A step of a live limits trace: now and then a limit change (of one key, or of every key: '*'),
 * else an ordinary step.
 */
function drawLiveStep(r: Random, policies: readonly Policy[]): TraceStep {
  const roll = r.int(0, 9);
  if (roll > 1) return drawStep(r);
  const drawn = drawStep(r);
  const step = r.int(0, 2) === 0 ? { ...drawn, key: EVERY_KEY } : drawn;
  const smooth = policies.some((p) => p.kind.startsWith('smooth'));
  const carry: Carry = smooth ? 'reset' : r.pick(['as-is', 'proportional', 'additive', 'reset']);
  if (roll === 0 && r.int(0, 2) === 0) return { ...step, op: 'clearLimit', carry };
  const policy = r.pick(policies);
  const override: LimitOverride = {
    policy: policy.name,
    limit: r.limit(8),
    ...(r.int(0, 2) === 0 ? { window: r.window() } : {}),
    ...('burst' in policy.options && r.int(0, 1) === 0 ? { burst: r.int(1, 8) } : {}),
  };
  const ttl = r.int(0, 2) === 0 ? r.int(1, 3000) : undefined;
  return {
    ...step,
    op: 'setLimit',
    limit: { override, carry, ...(ttl === undefined ? {} : { ttl }) },
  };
}

/** 1 to `max` policies with distinct ids and names (a limiter refuses duplicates). */
function drawPolicies(r: Random, kinds: readonly string[], max: number): Policy[] {
  const count = r.int(1, max);
  const policies: Policy[] = [];
  for (let attempts = 0; policies.length < count && attempts < 50; attempts++) {
    const draw = DRAWS[r.pick(kinds)];
    if (draw === undefined) throw new RangeError(`no algorithm of kind ${kinds.join(', ')}`);
    let policy: Policy;
    try {
      policy = draw(r);
    } catch {
      continue; // a combination the factory refuses (e.g. a GCRA rate off the µs grid)
    }
    if (policies.some((p) => p.id === policy.id || p.name === policy.name)) continue;
    policies.push(policy);
  }
  return policies;
}

const OPS: readonly TraceStep['op'][] = [
  ...Array<TraceStep['op']>(12).fill('consume'),
  ...Array<TraceStep['op']>(3).fill('peek'),
  ...Array<TraceStep['op']>(3).fill('refund'),
  'reset',
  'block',
  'unblock',
];

function drawStep(r: Random): TraceStep {
  const roll = r.int(0, 9);
  const advance =
    roll < 3 ? 0 : roll < 7 ? r.int(1, 400_000) : roll < 9 ? r.int(1, 3_000) : r.int(4e5, 5e6);
  return {
    advance,
    key: `k${r.int(0, 2)}`,
    cost: r.int(0, 2) === 0 ? r.int(0, 9) : 1,
    op: r.pick(OPS),
    duration: r.int(0, 3) === 0 ? 'forever' : r.int(1, 3000),
  };
}

/** mulberry32: a small seeded generator, enough to draw traces reproducibly. */
class Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(0, list.length - 1)]!;
  }
  /** 1 to `max`, now and then 0 (a policy that admits nothing). */
  limit(max: number): number {
    return this.int(0, 9) === 0 ? 0 : this.int(1, max);
  }
  /** No lockout (most often), a plain one, or a progressive one. */
  lockout(): { blockDuration?: BlockDuration } {
    const roll = this.int(0, 4);
    if (roll < 3) return {};
    if (roll === 3) return { blockDuration: this.int(1, 2000) };
    const initial = this.int(1, 500);
    const multiplier = this.pick([1, 1.5, 2, 3.25]);
    const forgetAfter = this.int(0, 3000);
    return { blockDuration: { initial, multiplier, max: this.int(500, 4000), forgetAfter } };
  }
  /** Whole milliseconds, or a few microseconds (rounding edges). */
  window(): number | `${number}us` {
    return this.int(0, 1) === 0 ? this.int(1, 3000) : (`${this.int(1, 5000)}us` as const);
  }
}
