/**
 * A local cache of denied keys: once the store has denied `key` for a cost, this process
 * answers the same denial (with times counted down) until that denial's `retryAfter` has
 * passed, without asking the store. A flood from one key then costs one store call per retry
 * window instead of one per request.
 *
 * It never admits anything and never denies what the store would admit: a denial for cost c
 * implies a denial for every cost ≥ c until retryAfter (every algorithm's state only recovers
 * with time), and the countdown starts when the request was *sent*, so the cached window ends
 * no later than the store's. What it cannot see is another process calling `reset(key)`: so no
 * denial is kept longer than `maxAge` (default 1 s), and a `reset` through this limiter clears it.
 * It is bounded by bytes as well as by keys: keys are caller input and can be long.
 */
import type { Clock } from './clock.js';
import type { Decision, PolicyDecision } from './decision.js';
import { type Duration, parseDuration } from './duration.js';
import { configError, optionNames, positiveInteger, readOptions } from './options.js';

export interface DeniedCacheOptions {
  /** Most keys remembered at once; the oldest entry makes room for a new one. @default 10_000 */
  maxKeys?: number;
  /**
   * Most bytes held at once, counting each key (2 bytes per UTF-16 unit) and a fixed overhead per
   * entry; the oldest entries make room. @default 4 MiB
   */
  maxBytes?: number;
  /**
   * Longest time a denial is answered from the cache, however long its retryAfter: the bound on
   * how long a `reset(key)` made in another process goes unseen here. @default '1s'
   */
  maxAge?: Duration;
  /**
   * Milliseconds (fractions allowed) used to count down cached denials. Only tests and
   * simulations need it: give it the same clock as the store's. @default the process clock
   */
  clock?: Clock;
}

/** @default 10 000 keys */
export const DEFAULT_DENIED_CACHE_KEYS = 10_000;
/** @default 4 MiB */
export const DEFAULT_DENIED_CACHE_BYTES = 4 * 1024 * 1024;
/** @default 1000 ms */
export const DEFAULT_DENIED_CACHE_MAX_AGE_MS = 1000;
/** Bytes counted per entry besides its key: the entry, the decision and its policy views. */
const ENTRY_OVERHEAD_BYTES = 512;

interface Entry {
  /** Smallest cost the store denied; larger costs are denied too until `until`. */
  readonly cost: number;
  /** Clock time (ms) at which the denial may no longer hold. */
  readonly until: number;
  /** Clock time (ms) the request was sent: the denial's times count down from here. */
  readonly since: number;
  readonly decision: Decision;
  /** What this entry counts against `maxBytes`. */
  readonly bytes: number;
}

const monotonic: Clock = () => performance.now();

/** Every option name of DeniedCacheOptions, checked against the type. */
const DENIED_CACHE_OPTION_NAMES = optionNames<DeniedCacheOptions>({
  maxKeys: true,
  maxBytes: true,
  maxAge: true,
  clock: true,
});

export class DeniedCache {
  readonly maxKeys: number;
  readonly maxBytes: number;
  /** Milliseconds. */
  readonly maxAge: number;
  private readonly clock: Clock;
  private readonly entries = new Map<string, Entry>();
  private held = 0;

  /** `where` names these options in errors. */
  constructor(options: DeniedCacheOptions = {}, where = 'RateLimiter.deniedCache') {
    const o = readOptions(options, where, DENIED_CACHE_OPTION_NAMES);
    this.maxKeys =
      o.maxKeys === undefined
        ? DEFAULT_DENIED_CACHE_KEYS
        : positiveInteger(o.maxKeys, `${where}.maxKeys`);
    this.maxBytes =
      o.maxBytes === undefined
        ? DEFAULT_DENIED_CACHE_BYTES
        : positiveInteger(o.maxBytes, `${where}.maxBytes`, ENTRY_OVERHEAD_BYTES);
    this.maxAge =
      o.maxAge === undefined
        ? DEFAULT_DENIED_CACHE_MAX_AGE_MS
        : parseDuration(o.maxAge, `${where}.maxAge`) / 1000;
    if (o.clock !== undefined && typeof o.clock !== 'function') {
      throw configError(`${where}.clock`, o.clock, 'a function returning milliseconds');
    }
    this.clock = (o.clock as Clock | undefined) ?? monotonic;
  }

  /** Keys currently remembered (expired ones linger until looked up or pushed out). */
  get size(): number {
    return this.entries.size;
  }

  /** Bytes currently counted against `maxBytes`. */
  get bytes(): number {
    return this.held;
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
      this.delete(key, entry);
      return undefined;
    }
    return countDown(entry.decision, now - entry.since);
  }

  /** Remembers a denial answered by the store for a request sent at `sentAt` (from `now()`). */
  remember(key: string, cost: number, decision: Decision, sentAt: number): void {
    // A block denies every cost, 0 included, until it ends; a block for ever (−1) for maxAge.
    const blocked = decision.reason === 'blocked';
    const left = blocked && decision.retryAfter < 0 ? this.maxAge : decision.retryAfter;
    // −1 (never admissible) and 0 carry no window to wait out.
    if (!blocked && (decision.allowed || !(left > 0) || decision.reason !== undefined)) return;
    const bytes = key.length * 2 + ENTRY_OVERHEAD_BYTES;
    // A key too large for the whole budget is not worth remembering.
    if (bytes > this.maxBytes) return;
    const entries = this.entries;
    const previous = entries.get(key);
    if (previous !== undefined) this.delete(key, previous);
    // Oldest first (Map keeps insertion order) until both bounds hold.
    while (entries.size >= this.maxKeys || this.held + bytes > this.maxBytes) {
      const [oldest, entry] = entries.entries().next().value as [string, Entry];
      this.delete(oldest, entry);
    }
    const until = sentAt + Math.min(left, this.maxAge);
    entries.set(key, { cost: blocked ? 0 : cost, until, since: sentAt, decision, bytes });
    this.held += bytes;
  }

  /** Forgets `key` (after a reset, refund, block or unblock through this limiter). */
  forget(key: string): void {
    const entry = this.entries.get(key);
    if (entry !== undefined) this.delete(key, entry);
  }

  clear(): void {
    this.entries.clear();
    this.held = 0;
  }

  private delete(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.held -= entry.bytes;
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
    // −1: blocked for ever.
    resetAfter: d.resetAfter < 0 ? d.resetAfter : Math.max(0, d.resetAfter - elapsed),
    retryAfter: d.retryAfter < 0 ? d.retryAfter : d.retryAfter - elapsed,
    policies,
  };
}
