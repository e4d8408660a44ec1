/**
 * The TypeScript twin of a Lua algorithm. `check` is a pure function of the stored state, the
 * time, the cost and the policy's params; it mirrors `check` in lua/<kind>.lua line for line
 * and never mutates `state`. Times are integer microseconds.
 */
export interface CheckResult<S> {
  allowed: boolean;
  /** Cost-1 requests that would still be admitted (after this one, when it is admitted). */
  remaining: number;
  /** Until the key is back to full capacity. */
  resetAfter: number;
  /** 0 when allowed; until `cost` would be admitted when denied; −1 when it never can be. */
  retryAfter: number;
  /** Shaping delay asked of an admitted request (0 for policing algorithms). */
  delay: number;
  /** When admitted with cost > 0: the state to store, and how long it matters (µs). */
  next?: S;
  ttl?: number;
}

export interface Algorithm<S = unknown> {
  readonly kind: string;
  /**
   * `slack` (reserve mode, `limiter.acquire`): smooth policies admit a request whose next-free
   * time is at most this far away (µs) and report that wait as `delay`; others ignore it.
   */
  check(
    state: S | undefined,
    now: number,
    cost: number,
    params: readonly number[],
    slack?: number,
  ): CheckResult<S>;
  /**
   * Reads the one-integer reply that lua/<kind>.lua's `pack` gives for a one-policy decision
   * (cheaper for Redis than a table), for the `cost` that was asked. Only algorithms with `pack`.
   */
  unpack?(reply: number, cost: number, params: readonly number[]): CheckResult<S>;
}
