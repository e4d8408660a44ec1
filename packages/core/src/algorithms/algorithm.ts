/**
 * The TypeScript twin of a Lua algorithm. `check` is a pure function of the stored state, the
 * time, the cost and the policy's params; it decides as `check` in lua/<kind>.lua does (the
 * differential test compares them) and never mutates `state`. Times are integer microseconds.
 */

/**
 * Greatest common divisor (Euclid), for reducing a rate `limit / window µs` to integers small
 * enough to stay exact in a double (token bucket, leaky bucket, the smooth policies).
 */
export function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** What every check answers, admitted or not. */
export interface Verdict {
  allowed: boolean;
  /** Cost-1 requests that would still be admitted (after this one, when it is admitted). */
  remaining: number;
  /** Until the key is back to full capacity. */
  resetAfter: number;
  /** 0 when allowed; until `cost` would be admitted when denied; −1 when it never can be. */
  retryAfter: number;
  /** Shaping delay asked of an admitted request (0 for policing algorithms). */
  delay: number;
}

/**
 * What `check` hands to the store's write (Lua: `commit`) when it admits a cost > 0: the state
 * to store and how long it matters (µs, the key's TTL). A denial that carries one (fixedWindow
 * `extendWindow`) is written too when the call consumes: it pushes a window's end out and
 * charges nothing (the Lua check writes it itself).
 */
export interface Charge<S> {
  next: S;
  ttl: number;
}

/** A verdict, plus the charge to write when it admits a cost > 0. */
export type CheckResult<S> = Verdict & Partial<Charge<S>>;

/**
 * An algorithm's integer parameters, in the order lua/<kind>.lua reads them from ARGV. Each
 * algorithm names them with its own tuple type (e.g. `readonly [interval: number, burst: number]`).
 */
export type Params = readonly number[];

export interface Algorithm<S = unknown, P extends Params = Params> {
  readonly kind: string;
  /**
   * `slack` (reserve mode, `limiter.acquire`): smooth policies admit a request whose next-free
   * time is at most this far away (µs) and report that wait as `delay`; others ignore it.
   */
  /**
   * `force` (a charge: `penalize`, a settle's overrun; Lua mode 7): admits whatever the state
   * holds, so the key may go into debt (docs/algorithms.md#debt); algorithms that cannot carry
   * debt ignore it.
   */
  check(
    state: S | undefined,
    now: number,
    cost: number,
    params: P,
    slack?: number,
    force?: boolean,
  ): CheckResult<S>;
  /**
   * Reads the one-integer reply lua/<kind>.lua's check gives for a one-policy decision
   * (cheaper for Redis than a table), for the `cost` that was asked. Only algorithms with one.
   */
  unpack?(reply: number, cost: number, params: P): CheckResult<S>;
  /**
   * Gives back up to `cost` units (`cost` > 0) to the state stored for a key, as refund in
   * lua/<kind>.lua does: the new state and its TTL, `'delete'` when the key is back to what a
   * missing key means, or undefined when nothing changes (a refund never creates state).
   */
  refund(state: S | undefined, now: number, cost: number, params: P): Refunded<S>;
  /**
   * Whether a policy with these params keeps its state as a string at its base key, so that
   * the Redis store can keep it as an entry of the caller's one key with the limiter's other
   * policies (lua/include/combined.lua). Absent: always. An algorithm that never does declares
   * `--- @own-key` in lua/<kind>.lua too (the registry test checks both agree).
   */
  sharesKey?(params: P): boolean;
  /**
   * Whether its policies can be leased (a quota lease, docs/algorithms.md#quota-leases): a
   * consume of g units is the same charge however it is split, and `remaining` is the room left.
   */
  readonly leasable?: true;
}

/** What a refund does to a key's state. */
export type Refunded<S> = Charge<S> | 'delete' | undefined;

/**
 * A bucket that fills with time, as include/refill.lua: `level` units at `since`, gaining `rate`
 * units per µs up to `capacity`; the level at max(since, now) (tokenBucket's refill, Guava's
 * resync in the smooth limiters). Past the time to fill up it is simply full, so
 * (now - since) · rate never leaves exact integers.
 */
export function refilled(
  level: number,
  since: number,
  capacity: number,
  rate: number,
  now: number,
): number {
  if (now <= since) return level;
  return now - since >= Math.ceil((capacity - level) / rate)
    ? capacity
    : level + (now - since) * rate;
}
