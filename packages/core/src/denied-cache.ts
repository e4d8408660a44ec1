/**
 * A local cache of denied keys: once the store has denied `key` for a cost, this process
 * answers the same denial (with times counted down) until that denial's `retryAfter` has
 * passed, without asking the store. A flood from one key then costs one store call per retry
 * window instead of one per request.
 *
 * It never admits anything and never denies what the store would admit: a denial for cost c
 * implies a denial for every cost ≥ c until retryAfter (every algorithm's state only recovers
 * with time), and the countdown starts when the request was *sent*, so the cached window ends
 * no later than the store's. What it cannot see is another process calling `reset(key)`: this
 * process keeps denying until the cached retryAfter (a `reset` through this limiter clears it).
 */
import type { Clock } from './clock.js';
import type { Decision, PolicyDecision } from './decision.js';
import { configError, positiveInteger, readOptions } from './options.js';

export interface DeniedCacheOptions {
  /** Most keys remembered at once; the oldest entry makes room for a new one. @default 10_000 */
  maxKeys?: number;
  /**
   * Milliseconds (fractions allowed) used to count down cached denials. Only tests and
   * simulations need it: give it the same clock as the store's. @default the process clock
   */
  clock?: Clock;
}

/**
 * How long a block for ever is answered from the cache before the store is asked again (ms):
 * an unblock in another process then reaches this one within this time. @default 1000
 */
export const FOREVER_BLOCK_RECHECK_MS = 1000;

/** @default 10 000 keys */
export const DEFAULT_DENIED_CACHE_KEYS = 10_000;

interface Entry {
  /** Smallest cost the store denied; larger costs are denied too until `until`. */
  readonly cost: number;
  /** Clock time (ms) at which the denial may no longer hold. */
  readonly until: number;
  /** Clock time (ms) the request was sent: the denial's times count down from here. */
  readonly since: number;
  readonly decision: Decision;
}

const monotonic: Clock = () => performance.now();

export class DeniedCache {
  readonly maxKeys: number;
  private readonly clock: Clock;
  private readonly entries = new Map<string, Entry>();

  constructor(options: DeniedCacheOptions = {}) {
    const o = readOptions(options, 'RateLimiter.deniedCache', ['maxKeys', 'clock']);
    this.maxKeys =
      o.maxKeys === undefined
        ? DEFAULT_DENIED_CACHE_KEYS
        : positiveInteger(o.maxKeys, 'RateLimiter.deniedCache.maxKeys');
    if (o.clock !== undefined && typeof o.clock !== 'function') {
      throw configError(
        'RateLimiter.deniedCache.clock',
        o.clock,
        'a function returning milliseconds',
      );
    }
    this.clock = (o.clock as Clock | undefined) ?? monotonic;
  }

  /** Keys currently remembered (expired ones linger until looked up or pushed out). */
  get size(): number {
    return this.entries.size;
  }

  /** The time to pass to `remember` for a request about to be sent. */
  now(): number {
    return this.clock();
  }

  /** The cached denial of `cost` for `key`, its times counted down to now; else undefined. */
  lookup(key: string, cost: number): Decision | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || cost < entry.cost) return undefined;
    const now = this.clock();
    if (now >= entry.until) {
      this.entries.delete(key);
      return undefined;
    }
    return countDown(entry.decision, now - entry.since);
  }

  /** Remembers a denial answered by the store for a request sent at `sentAt` (from `now()`). */
  remember(key: string, cost: number, decision: Decision, sentAt: number): void {
    if (decision.reason === 'blocked') {
      // A block denies every cost, 0 included, until it ends (a block for ever: recheck soon).
      const left = decision.retryAfter < 0 ? FOREVER_BLOCK_RECHECK_MS : decision.retryAfter;
      this.store(key, { cost: 0, until: sentAt + left, since: sentAt, decision });
      return;
    }
    // −1 (never admissible) and 0 carry no window to wait out.
    if (decision.allowed || !(decision.retryAfter > 0) || decision.reason !== undefined) return;
    this.store(key, { cost, until: sentAt + decision.retryAfter, since: sentAt, decision });
  }

  private store(key: string, entry: Entry): void {
    const entries = this.entries;
    const previous = entries.get(key);
    if (previous !== undefined) entries.delete(key);
    else if (entries.size >= this.maxKeys) {
      // Oldest first: Map keeps insertion order.
      entries.delete(entries.keys().next().value as string);
    }
    entries.set(key, entry);
  }

  /** Forgets `key` (after a reset, refund, block or unblock through this limiter). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }
}

function countDown(d: Decision, elapsed: number): Decision {
  const policies: PolicyDecision[] = new Array(d.policies.length);
  for (let i = 0; i < policies.length; i++) {
    const p = d.policies[i]!;
    policies[i] = {
      ...p,
      resetAfter: p.resetAfter < 0 ? p.resetAfter : Math.max(0, p.resetAfter - elapsed),
      retryAfter: p.retryAfter > 0 ? Math.max(0, p.retryAfter - elapsed) : p.retryAfter,
    };
  }
  return {
    ...d,
    resetAfter: d.resetAfter < 0 ? d.resetAfter : Math.max(0, d.resetAfter - elapsed),
    retryAfter: d.retryAfter < 0 ? d.retryAfter : d.retryAfter - elapsed,
    policies,
  };
}
