/**
 * adaptiveConcurrency: an in-process concurrency limit that finds the service's capacity from
 * the latency (and drops) of the requests it admits — Gradient2, Vegas or AIMD, with Netflix's
 * concurrency-limits defaults — and sheds lower criticality classes first.
 */
import { randomUUID } from 'node:crypto';
import { type Clock, processClock, readClockOption, readMicros } from '../clock.js';
import type { Decision, DecisionReason, PolicyDecision } from '../decision.js';
import { RateLimitArgumentError } from '../errors.js';
import { configError, fieldPathOf, optionalName, ownValue, readOptions } from '../options.js';
import { AIMD_OPTION_NAMES, AimdLimit, type AimdOptions } from './aimd.js';
import {
  type Criticality,
  ceilingOf,
  type Reserves,
  readCriticality,
  readReserves,
} from './criticality.js';
import { type EventLoopOptions, EventLoopSignal } from './event-loop.js';
import { type FleetOptions, FleetReserve } from './fleet.js';
import { GRADIENT2_OPTION_NAMES, Gradient2Limit, type Gradient2Options } from './gradient2.js';
import type { LimitAlgorithm, LimitSample } from './limit-algorithm.js';
import { VEGAS_OPTION_NAMES, VegasLimit, type VegasOptions } from './vegas.js';

/** The options every algorithm shares. */
export interface SheddingOptions {
  /** Name used in decisions (`policy`). @default `adaptive-<algorithm>` */
  name?: string;
  /** Epoch milliseconds for latency measurement; inject one for deterministic tests. @default the process clock */
  clock?: Clock;
  /** Share of the limit (0 to 0.999) that only critical requests may fill. @default 0.2 */
  criticalReserve?: number;
  /** Further share of the limit (0 to 0.999) that sheddable requests may not fill. @default 0.1 */
  defaultReserve?: number;
  /**
   * Refuse sheddable and default requests while the event loop is too busy (`true`: the
   * default thresholds). @default false
   */
  eventLoop?: boolean | EventLoopOptions;
  /**
   * A critical reserve kept fleet-wide: each admitted non-critical request also holds a lease
   * of a `ConcurrencyLimiter` pool shared by every process (Redis), so non-critical traffic
   * never fills the pool's reserved share, whichever process it arrives at. Decisions then need
   * `acquire()` (the store is asked); `tryAcquire()` refuses. @default none: the limit is per process
   */
  fleet?: FleetOptions;
}

/** `adaptiveConcurrency` options: the algorithm and its parameters, plus the shared ones. */
export type AdaptiveConcurrencyOptions = SheddingOptions &
  (
    | ({ /** @default 'gradient2' */ algorithm?: 'gradient2' } & Gradient2Options)
    | ({ algorithm: 'vegas' } & VegasOptions)
    | ({ algorithm: 'aimd' } & AimdOptions)
  );

/** What the algorithm learns when a lease is released. */
export interface ReleaseOptions {
  /** The request's latency in milliseconds. @default the time since acquire, by `clock` */
  latency?: number;
  /** The request was dropped (timed out, or failed because the service was overloaded). @default false */
  dropped?: boolean;
  /**
   * Free the slot and teach the algorithm nothing: the request ended without a latency that
   * says anything about the service (the client went away before the answer). As Netflix's
   * `onIgnore`. @default false
   */
  ignore?: boolean;
}

/** A slot of the adaptive limit, held from acquire to release. */
export interface AdaptiveLease {
  /** Unique per acquire (a random UUID). */
  readonly id: string;
  /** Frees the slot and feeds the latency to the algorithm; true the first time, then false. */
  release(options?: ReleaseOptions): boolean;
}

/** A Decision of the shedder: `limit` is the adaptive limit, `remaining` the class's room. */
export interface AdaptiveDecision extends Decision {
  /** The class the request was admitted or shed as. */
  readonly criticality: Criticality;
  /** Requests in flight after this decision. */
  readonly inFlight: number;
  /** Present when admitted: release it when the work ends. */
  readonly lease?: AdaptiveLease;
}

const SHARED_NAMES = [
  'algorithm',
  'name',
  'clock',
  'criticalReserve',
  'defaultReserve',
  'eventLoop',
  'fleet',
];
const ALGORITHMS = {
  gradient2: {
    names: GRADIENT2_OPTION_NAMES,
    create: (o: Record<string, unknown>, w: string) => new Gradient2Limit(o, w),
  },
  vegas: {
    names: VEGAS_OPTION_NAMES,
    create: (o: Record<string, unknown>, w: string) => new VegasLimit(o, w),
  },
  aimd: {
    names: AIMD_OPTION_NAMES,
    create: (o: Record<string, unknown>, w: string) => new AimdLimit(o, w),
  },
} as const;

/** Smoothed latency for `retryAfter`: TCP's SRTT gain of 1/8. */
const SRTT_GAIN = 8;

/** The adaptive limit and its bookkeeping; build one with `adaptiveConcurrency(...)`. */
export class AdaptiveConcurrency {
  readonly algorithm: 'gradient2' | 'vegas' | 'aimd';
  /** The name decisions carry in `policy`. */
  readonly name: string;
  /** The estimator (its state is readable for tests and metrics). */
  readonly estimator: LimitAlgorithm;
  private readonly clock: Clock;
  private readonly reserves: Reserves;
  private readonly eventLoop: EventLoopSignal | undefined;
  /** The fleet-wide pool non-critical requests also take a lease of, when `fleet` is given. */
  readonly fleet: FleetReserve | undefined;
  private held = 0;
  /** Requests refused for lack of room under the limit, ever (tells a lease it ran saturated). */
  private refused = 0;
  /** Smoothed latency in microseconds (0 before the first sample). */
  private srtt = 0;
  private readonly listeners = new Set<(decision: AdaptiveDecision) => void>();

  constructor(options: AdaptiveConcurrencyOptions = {}) {
    const where = fieldPathOf(options, 'adaptiveConcurrency');
    const algorithm = ownValue(options ?? {}, 'algorithm') ?? 'gradient2';
    if (typeof algorithm !== 'string' || !Object.hasOwn(ALGORITHMS, algorithm)) {
      throw configError(`${where}.algorithm`, algorithm, "'gradient2', 'vegas' or 'aimd'");
    }
    this.algorithm = algorithm as keyof typeof ALGORITHMS;
    const spec = ALGORITHMS[this.algorithm];
    const o = readOptions(options, where, [...SHARED_NAMES, ...spec.names]);
    this.estimator = spec.create(o, where);
    this.name = optionalName(o.name, `${where}.name`) ?? `adaptive-${this.algorithm}`;
    this.clock = readClockOption(o.clock, `${where}.clock`) ?? processClock;
    this.reserves = readReserves(o, where);
    const loop = o.eventLoop;
    if (loop !== undefined && loop !== false) {
      this.eventLoop = new EventLoopSignal(loop === true ? {} : loop, `${where}.eventLoop`);
    }
    if (o.fleet !== undefined)
      this.fleet = new FleetReserve(o.fleet, `${where}.fleet`, this.reserves);
  }

  /** The current adaptive limit in whole requests. */
  get limit(): number {
    return this.estimator.limit;
  }

  /** Requests admitted and not yet released. */
  get inFlight(): number {
    return this.held;
  }

  /** Event-loop utilization (0 to 1) over the last interval; undefined without `eventLoop`. */
  get eventLoopUtilization(): number | undefined {
    return this.eventLoop?.utilization();
  }

  /**
   * Admits the request when its class has room under the limit (and the event loop is not too
   * busy for it, and, with `fleet`, the fleet-wide pool has room for its class): the decision
   * carries a lease to release when the work ends. Otherwise the decision is denied (`reason`
   * 'overloaded' or 'event-loop', or the pool's store failure; `retryAfter` the recent latency).
   */
  async acquire(options?: { criticality?: Criticality }): Promise<AdaptiveDecision> {
    const criticality = readAcquireOptions(options);
    const local = this.admit(criticality);
    if (this.fleet === undefined || local.lease === undefined) return this.publish(local);
    const pool = await this.fleet.take(criticality);
    return this.publish(pool === undefined ? local : this.withPool(local, pool));
  }

  /**
   * `acquire` without the promise, for adapters on the request path. With `fleet` it throws a
   * RateLimitArgumentError: the pool's store has to be asked, so use `acquire()`.
   */
  tryAcquire(options?: { criticality?: Criticality }): AdaptiveDecision {
    const criticality = readAcquireOptions(options);
    if (this.fleet !== undefined) {
      throw new RateLimitArgumentError(
        'fleet',
        undefined,
        'tryAcquire cannot ask the fleet-wide pool without waiting: use acquire()',
      );
    }
    return this.publish(this.admit(criticality));
  }

  /** The local decision: a slot under the class's ceiling, with its lease. */
  private admit(criticality: Criticality): AdaptiveDecision {
    const limit = this.estimator.limit;
    const ceiling = ceilingOf(limit, criticality, this.reserves);
    if (this.eventLoop?.sheds(criticality)) return this.denied(limit, criticality, 'event-loop');
    if (this.held >= ceiling) {
      this.refused += 1;
      return this.denied(limit, criticality, 'overloaded');
    }
    this.held += 1;
    const decision = this.decisionOf(true, limit, ceiling - this.held, 0, criticality, undefined);
    // The algorithms skip samples taken while under half the limit was in use (nothing learnt
    // about capacity). A class that may fill only part of the limit is in use when near its own
    // ceiling: without this, a large critical reserve kept every default request's sample out,
    // and the limit drifted up while default requests were being shed.
    const inUse = ceiling === limit ? this.held : Math.floor((this.held * limit) / ceiling);
    return { ...decision, lease: this.lease(inUse) };
  }

  /**
   * The local admission joined with the pool's answer. Refused by the pool: the local slot is
   * given back without teaching the algorithm anything (no work ran). Admitted: one lease
   * frees both (the pool's release is bounded by its timeout; a failed one expires at leaseTtl).
   */
  private withPool(
    local: AdaptiveDecision,
    pool: Decision & { lease?: { release(): Promise<boolean> } },
  ): AdaptiveDecision {
    const policies = [...local.policies, ...pool.policies];
    if (!pool.allowed) {
      this.held -= 1;
      const reason = pool.reason ?? 'overloaded';
      const denied = this.denied(local.limit, local.criticality, reason);
      const retryAfter = Math.max(
        denied.retryAfter,
        pool.reason === undefined ? 0 : pool.retryAfter,
      );
      return { ...denied, retryAfter, resetAfter: retryAfter, policy: pool.policy, policies };
    }
    const own = local.lease as AdaptiveLease;
    const shared = pool.lease;
    const lease: AdaptiveLease = {
      id: own.id,
      release: (options?: ReleaseOptions): boolean => {
        const first = own.release(options);
        if (first && shared !== undefined) shared.release().catch(() => false);
        return first;
      },
    };
    return {
      ...local,
      remaining: Math.min(local.remaining, pool.remaining),
      policies,
      lease,
      ...(pool.reason === undefined ? {} : { reason: pool.reason }),
    };
  }

  private publish(decision: AdaptiveDecision): AdaptiveDecision {
    for (const listener of this.listeners) listener(decision);
    return decision;
  }

  /** Calls `listener` with every decision (metrics); returns the unsubscribe function. */
  subscribe(listener: (decision: AdaptiveDecision) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** `inFlight`: requests in flight at admission, scaled to the limit for the request's class. */
  private lease(inFlight: number): AdaptiveLease {
    const started = readMicros(this.clock);
    const refusedBefore = this.refused;
    let released = false;
    return {
      id: randomUUID(),
      release: (options?: ReleaseOptions): boolean => {
        const sample = readRelease(options);
        if (released) return false;
        released = true;
        this.held -= 1;
        if (sample.ignore) return true;
        const latency = sample.latency ?? readMicros(this.clock) - started;
        // Saturated: a request was refused for lack of room while this one ran.
        const saturated = this.refused !== refusedBefore;
        this.learn({ rtt: Math.max(1, latency), inFlight, dropped: sample.dropped, saturated });
        return true;
      },
    };
  }

  private learn(sample: LimitSample): void {
    const { rtt } = sample;
    this.srtt = this.srtt === 0 ? rtt : this.srtt + Math.floor((rtt - this.srtt) / SRTT_GAIN);
    this.estimator.update(sample);
  }

  private denied(
    limit: number,
    criticality: Criticality,
    reason: DecisionReason,
  ): AdaptiveDecision {
    // A slot frees, on average, after about one recent latency.
    const retryAfter = Math.max(1, Math.ceil(this.srtt / 1000));
    return this.decisionOf(false, limit, 0, retryAfter, criticality, reason);
  }

  private decisionOf(
    allowed: boolean,
    limit: number,
    remaining: number,
    retryAfter: number,
    criticality: Criticality,
    reason: DecisionReason | undefined,
  ): AdaptiveDecision {
    const view: PolicyDecision = {
      name: this.name,
      allowed,
      limit,
      quota: limit,
      remaining: Math.max(0, remaining),
      resetAfter: retryAfter,
      retryAfter,
      delay: 0,
      window: 0,
    };
    const { name, ...fields } = view;
    return {
      ...fields,
      policy: name,
      policies: [view],
      criticality,
      inFlight: this.held,
      ...(reason === undefined ? {} : { reason }),
    };
  }
}

/** Checks `acquire` options (only `criticality`) and answers the class. */
function readAcquireOptions(options: { criticality?: Criticality } | undefined): Criticality {
  if (options !== undefined && (options === null || typeof options !== 'object')) {
    throw new RateLimitArgumentError('options', options, 'acquire options must be an object');
  }
  for (const name of Object.keys(options ?? {})) {
    if (name !== 'criticality') {
      throw new RateLimitArgumentError(
        name,
        undefined,
        `${name} is not an acquire option (known: criticality)`,
      );
    }
  }
  return readCriticality(options?.criticality);
}

/** Checks `release` options: latency in non-negative milliseconds, dropped and ignore booleans. */
function readRelease(options: ReleaseOptions | undefined): {
  latency?: number;
  dropped: boolean;
  ignore: boolean;
} {
  if (options === undefined) return { dropped: false, ignore: false };
  if (options === null || typeof options !== 'object') {
    throw new RateLimitArgumentError('options', options, 'release options must be an object');
  }
  const { latency, dropped, ignore } = options;
  if (
    latency !== undefined &&
    (typeof latency !== 'number' || !Number.isFinite(latency) || latency < 0)
  ) {
    throw new RateLimitArgumentError(
      'latency',
      latency,
      `latency must be milliseconds >= 0, got ${String(latency)}`,
    );
  }
  for (const [name, value] of [
    ['dropped', dropped],
    ['ignore', ignore],
  ] as const) {
    if (value !== undefined && typeof value !== 'boolean') {
      throw new RateLimitArgumentError(
        name,
        value,
        `${name} must be a boolean, got ${String(value)}`,
      );
    }
  }
  return {
    ...(latency === undefined ? {} : { latency: Math.round(latency * 1000) }),
    dropped: dropped === true,
    ignore: ignore === true,
  };
}

/**
 * An in-process adaptive concurrency limit with criticality-aware shedding.
 *
 * @example
 * ```ts
 * import { adaptiveConcurrency } from '@floodgate/core';
 *
 * const shed = adaptiveConcurrency({ algorithm: 'gradient2' });
 * const d = await shed.acquire({ criticality: 'critical' });
 * if (d.allowed) {
 *   try {
 *     await doWork();
 *   } finally {
 *     d.lease?.release(); // latency measured from acquire to release
 *   }
 * }
 * ```
 */
export function adaptiveConcurrency(options: AdaptiveConcurrencyOptions = {}): AdaptiveConcurrency {
  return new AdaptiveConcurrency(options);
}
