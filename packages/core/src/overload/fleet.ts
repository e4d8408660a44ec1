/**
 * The fleet-wide critical reserve (Stripe's fleet-usage load shedder): every admitted
 * non-critical request also holds a lease of one pool shared by every process, a
 * `ConcurrencyLimiter` key (on Redis for a fleet), and may take one only while the
 * non-critical leases held fleet-wide leave the reserved share free. Critical requests take no
 * lease: they never wait on the store, and the reserve is theirs whatever the other processes
 * do. Leases are released when the work ends and expire after the limiter's `leaseTtl` when a
 * process dies; every call goes through the limiter's store guard (timeout, circuit breaker,
 * `onStoreError`).
 */
import { type ConcurrencyDecision, ConcurrencyLimiter } from '../concurrency-limiter.js';
import { configError, optionNames, readOptions } from '../options.js';
import { type Criticality, ceilingOf, type Reserves, readReserves } from './criticality.js';

/** `adaptiveConcurrency({ fleet })`: the pool shared by every process and its reserves. */
export interface FleetOptions {
  /**
   * The fleet-wide pool: its `limit` is the fleet's capacity in requests in flight, its
   * `leaseTtl` longer than any request (a lease outliving it frees its slot early), its store
   * shared by every process (`redisStore`).
   */
  limiter: ConcurrencyLimiter;
  /** The pool's key in the limiter. @default 'overload' */
  key?: string;
  /** Share of the pool that only critical requests may fill. @default the shedder's `criticalReserve` */
  criticalReserve?: number;
  /** Further share that sheddable requests may not fill. @default the shedder's `defaultReserve` */
  defaultReserve?: number;
}

const FLEET_OPTION_NAMES = optionNames<FleetOptions>({
  limiter: true,
  key: true,
  criticalReserve: true,
  defaultReserve: true,
});

/** @default 'overload': the pool's key when none is given. */
export const DEFAULT_FLEET_KEY = 'overload';

/** The pool, its key, and the share of it each class may hold; built from `fleet` options. */
export class FleetReserve {
  readonly limiter: ConcurrencyLimiter;
  readonly key: string;
  readonly reserves: Reserves;

  constructor(options: unknown, where: string, local: Reserves) {
    const o = readOptions(options, where, FLEET_OPTION_NAMES);
    if (!(o.limiter instanceof ConcurrencyLimiter)) {
      throw configError(
        `${where}.limiter`,
        o.limiter,
        'a ConcurrencyLimiter (the fleet-wide pool)',
      );
    }
    this.limiter = o.limiter;
    const key = o.key ?? DEFAULT_FLEET_KEY;
    if (typeof key !== 'string' || key === '') {
      throw configError(`${where}.key`, key, 'a non-empty string');
    }
    this.key = key;
    this.reserves = readReserves(
      {
        criticalReserve: o.criticalReserve ?? local.critical / 1000,
        defaultReserve: o.defaultReserve ?? local.default / 1000,
      },
      where,
    );
    if (this.ceiling('sheddable') < 1) {
      const field = o.defaultReserve === undefined ? 'criticalReserve' : 'defaultReserve';
      throw configError(
        `${where}.${field}`,
        o[field] ?? (field === 'criticalReserve' ? local.critical : local.default) / 1000,
        `a share that leaves sheddable requests at least one of the pool's ${this.limiter.limit} leases (criticalReserve + defaultReserve ≤ ${(1 - 1 / this.limiter.limit).toFixed(3)})`,
      );
    }
  }

  /** Leases of the pool a request of `criticality` may take while fewer are held. */
  ceiling(criticality: Criticality): number {
    return ceilingOf(this.limiter.limit, criticality, this.reserves);
  }

  /** Takes a lease for a non-critical request (undefined for a critical one: it takes none). */
  async take(criticality: Criticality): Promise<ConcurrencyDecision | undefined> {
    if (criticality === 'critical') return undefined;
    return this.limiter.acquire(this.key, { limit: this.ceiling(criticality) });
  }
}
