/**
 * The in-memory store: runs the TypeScript twins of the Lua scripts in this process, with the
 * same all-or-nothing rule, so a single instance gets the same answers Redis would give.
 */
import { ALGORITHMS, type Algorithm, type CheckResult } from '../algorithms/index.js';
import { type Clock, processClock, readMicros } from '../clock.js';
import type { StoreDecision, StoreResult } from '../decision.js';
import { configError, positiveInteger, readOptions } from '../options.js';
import { type Lockout, lockoutLength, type Policy } from '../policy.js';
import type { PreparedPolicies, Store } from './store.js';

export interface MemoryStoreOptions {
  /** Epoch milliseconds (fractions allowed). @default the process clock */
  clock?: Clock;
  /**
   * Most keys held at once (one per key and policy). Expired keys are swept to make room; live
   * ones are never evicted (see `maxKeys` in the README for why), so when the table is full of
   * live keys a new key is denied with `reason: 'store-full'` until room frees up.
   * @default 1_000_000
   */
  maxKeys?: number;
}

/** @default 1_000_000 keys */
export const DEFAULT_MAX_KEYS = 1_000_000;
/** How often an unref'd timer drops expired keys (ms). */
export const SWEEP_INTERVAL_MS = 60_000;
/** When full, at most one full sweep per this many µs of store time; denials retry after it. */
const FULL_SWEEP_SPACING_US = 1_000_000;

interface Entry {
  state: unknown;
  /** Store time (µs) after which the state no longer matters. */
  expiresAt: number;
  /** Set when the entry leaves the table: a limiter's remembered slot must look it up again. */
  dropped?: true;
}

/** A key's block: the twin of the block string in lua/include/engine.lua. */
interface BlockEntry {
  /** Blocked until (µs); 0: for ever. */
  until: number;
  /** The blocking policy's index + 1; 0: by hand. */
  by: number;
  /** Lockouts in a row; forgotten at `forgetAt`. */
  level: number;
  forgetAt: number;
  /** max(until, forgetAt); Infinity for ever. */
  expiresAt: number;
}

export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  return new MemoryStore(options);
}

export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly maxKeys: number;
  /** The store's time source (ConcurrencyLimiter reads it too). */
  readonly clock: Clock;
  private readonly entries = new Map<string, Entry>();
  /** Block states by block key (looked up only while there is one). */
  private readonly blocks = new Map<string, BlockEntry>();
  private sweeper: NodeJS.Timeout | undefined;
  private lastFullSweep = Number.NEGATIVE_INFINITY;

  constructor(options: MemoryStoreOptions = {}) {
    const o = readOptions(options, 'memoryStore', ['clock', 'maxKeys']);
    if (o.clock !== undefined && typeof o.clock !== 'function') {
      throw configError('memoryStore.clock', o.clock, 'a function returning epoch milliseconds');
    }
    this.clock = (o.clock as Clock | undefined) ?? processClock;
    this.maxKeys =
      o.maxKeys === undefined
        ? DEFAULT_MAX_KEYS
        : positiveInteger(o.maxKeys, 'memoryStore.maxKeys');
  }

  /** Keys currently held (expired ones may linger until the next sweep). */
  get size(): number {
    return this.entries.size;
  }

  prepare(policies: readonly Policy[]): PreparedPolicies {
    const algorithms = policies.map((p, i) => {
      const algorithm = ALGORITHMS[p.kind];
      if (!algorithm)
        throw configError(`policies[${i}].kind`, p.kind, 'an algorithm this version knows');
      return algorithm;
    });
    const params = policies.map((p) => p.params);
    const lockouts = policies.map((p) => p.lockout);
    const n = policies.length;
    const decideNow: NonNullable<PreparedPolicies['decideNow']> = (keys, cost, peek, slots) => {
      const now = readMicros(this.clock);
      if (this.blocks.size > 0) {
        const blocked = this.blockedAnswer(keys[n]!, now);
        if (blocked !== undefined) return blocked;
      }
      return n === 1
        ? this.decideOne(algorithms[0]!, params[0]!, lockouts, keys, cost, peek, 0, now, slots)
        : this.decide(algorithms, params, lockouts, keys, cost, peek, 0, now, slots);
    };
    return {
      decide: async (keys, cost, peek) => decideNow(keys, cost, peek),
      decideNow,
      reserve: async (keys, cost, slack) => {
        const now = readMicros(this.clock);
        const blocked = this.blockedAnswer(keys[n]!, now);
        if (blocked !== undefined) return blocked;
        return this.decide(algorithms, params, lockouts, keys, cost, false, slack, now);
      },
      reset: async (keys) => {
        for (const key of keys.slice(0, n)) {
          const entry = this.entries.get(key);
          if (entry !== undefined) this.drop(key, entry);
        }
        this.blocks.delete(keys[n]!);
      },
      refund: async (keys, cost) => {
        const now = readMicros(this.clock);
        if (cost > 0) {
          for (let i = 0; i < n; i++) {
            const key = keys[i]!;
            const entry = this.entries.get(key);
            const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
            const refunded = algorithms[i]!.refund(state, now, cost, params[i]!);
            if (refunded === undefined || entry === undefined) continue;
            if (refunded === 'delete') this.drop(key, entry);
            else {
              entry.state = refunded.next;
              entry.expiresAt = now + refunded.ttl;
            }
          }
        }
        return decideNow(keys, 0, true);
      },
      block: async (keys, micros) => {
        const now = readMicros(this.clock);
        const previous = this.blockOf(keys[n]!, now);
        const level = previous === undefined || now >= previous.forgetAt ? 0 : previous.level;
        this.writeBlock(
          keys[n]!,
          micros === 0 ? 0 : now + micros,
          0,
          level,
          previous?.forgetAt ?? 0,
        );
      },
      unblock: async (keys) => {
        this.blocks.delete(keys[n]!);
      },
    };
  }

  /** The live block at `key`, if any (an expired one is dropped). */
  private blockOf(key: string, now: number): BlockEntry | undefined {
    const block = this.blocks.get(key);
    if (block !== undefined && block.expiresAt <= now) {
      this.blocks.delete(key);
      return undefined;
    }
    return block;
  }

  /** The answer for a blocked key, or undefined when it is not blocked. */
  private blockedAnswer(key: string, now: number): StoreDecision | undefined {
    const block = this.blockOf(key, now);
    if (block === undefined || (block.until !== 0 && block.until <= now)) return undefined;
    return {
      admitted: false,
      results: [],
      blocked: { by: block.by - 1, left: block.until === 0 ? -1 : block.until - now },
    };
  }

  private writeBlock(
    key: string,
    until: number,
    by: number,
    level: number,
    forgetAt: number,
  ): void {
    const expiresAt = until === 0 ? Number.POSITIVE_INFINITY : Math.max(until, forgetAt);
    this.blocks.set(key, { until, by, level, forgetAt, expiresAt });
    this.startSweeper();
  }

  /**
   * Policy `i` denied a cost it could admit and has a lockout: block the key (the k-th block
   * in a row lasts longer when progressive) and forget that policy's state, so it starts
   * fresh when the block ends.
   */
  private lockOut(
    keys: readonly string[],
    i: number,
    lockout: Lockout,
    level: number,
    now: number,
  ): StoreDecision {
    const length = lockoutLength(lockout, level);
    const until = now + length;
    this.writeBlock(keys[keys.length - 1]!, until, i + 1, level + 1, until + lockout.forgetAfter);
    const entry = this.entries.get(keys[i]!);
    if (entry !== undefined) this.drop(keys[i]!, entry);
    return { admitted: false, results: [], blocked: { by: i, left: length } };
  }

  /** Lockouts in a row so far for the block key (0 when forgotten or none). */
  private lockoutLevel(keys: readonly string[], now: number): number {
    const block = this.blockOf(keys[keys.length - 1]!, now);
    return block === undefined || now >= block.forgetAt ? 0 : block.level;
  }

  /** Drops every expired key now. */
  sweep(): number {
    const now = readMicros(this.clock);
    let dropped = 0;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) {
        this.drop(key, entry);
        dropped++;
      }
    }
    for (const [key, block] of this.blocks) {
      if (block.expiresAt <= now) {
        this.blocks.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  private drop(key: string, entry: Entry): void {
    this.entries.delete(key);
    entry.dropped = true;
  }

  /**
   * The entry of `key` in the table, if any, expired or not. `slot` is the entry this limiter
   * last saw for the key (RateLimiter remembers one per recent key): while it is still in the
   * table it is the key's entry, which saves a hash lookup per decision. An expired entry is
   * not dropped here: its state reads as missing, and a write reuses it in place (a gcra key
   * expires between most requests, and dropping and re-adding it cost two more hash updates).
   */
  private entryOf(key: string, slot: unknown): Entry | undefined {
    const entry = slot as Entry | undefined;
    if (entry !== undefined && !entry.dropped) return entry;
    return this.entries.get(key);
  }

  private decide(
    algorithms: readonly Algorithm[],
    params: readonly (readonly number[])[],
    lockouts: readonly (Lockout | undefined)[],
    keys: readonly string[],
    cost: number,
    peek: boolean,
    slack: number,
    now: number,
    slots?: unknown[],
  ): StoreDecision {
    const n = algorithms.length;
    if (n === 1)
      return this.decideOne(
        algorithms[0]!,
        params[0]!,
        lockouts,
        keys,
        cost,
        peek,
        slack,
        now,
        slots,
      );
    const states: unknown[] = new Array(n);
    const results: CheckResult<unknown>[] = new Array(n);
    // Entries are updated in place on admission: one hash lookup per key and decision at most.
    const found: (Entry | undefined)[] = new Array(n);
    let missing = 0;
    let admitted = true;
    for (let i = 0; i < n; i++) {
      const entry = this.entryOf(keys[i]!, slots?.[i]);
      if (slots !== undefined) slots[i] = entry;
      found[i] = entry;
      if (entry === undefined) missing++;
      states[i] = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
      const r = algorithms[i]!.check(states[i], now, cost, params[i]!, slack);
      results[i] = r;
      if (!r.allowed) admitted = false;
    }
    if (admitted) {
      if (!peek && cost > 0) {
        if (missing > 0 && !this.makeRoom(missing, now)) {
          return this.full(algorithms, params, states, now);
        }
        for (let i = 0; i < n; i++) {
          const r = results[i]!;
          const entry = found[i];
          if (entry !== undefined) {
            entry.state = r.next;
            entry.expiresAt = now + r.ttl!;
          } else {
            const created: Entry = { state: r.next, expiresAt: now + r.ttl! };
            this.entries.set(keys[i]!, created);
            if (slots !== undefined) slots[i] = created;
          }
        }
        this.startSweeper();
      }
      return { admitted, results };
    }
    if (!peek) {
      // The longest lockout among the policies that denied a cost they could admit.
      let by = -1;
      let longest = -1;
      const level = this.lockoutLevel(keys, now);
      for (let i = 0; i < n; i++) {
        const r = results[i]!;
        const lockout = lockouts[i];
        if (r.allowed || r.retryAfter < 0 || lockout === undefined) continue;
        const length = lockoutLength(lockout, level);
        if (length > longest) {
          by = i;
          longest = length;
        }
      }
      if (by >= 0) return this.lockOut(keys, by, lockouts[by]!, level, now);
    }
    if (cost > 0) {
      // Nothing was taken: policies that would have admitted describe their key as it stands.
      for (let i = 0; i < n; i++) {
        if (results[i]!.allowed) results[i] = algorithms[i]!.check(states[i], now, 0, params[i]!);
      }
    }
    return { admitted, results };
  }

  /** `decide` for one policy: the same steps without the per-policy arrays. */
  private decideOne(
    algorithm: Algorithm,
    params: readonly number[],
    lockouts: readonly (Lockout | undefined)[],
    keys: readonly string[],
    cost: number,
    peek: boolean,
    slack: number,
    now: number,
    slots?: unknown[],
  ): StoreDecision {
    const key = keys[0]!;
    const entry = this.entryOf(key, slots?.[0]);
    if (slots !== undefined) slots[0] = entry;
    const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
    const r = algorithm.check(state, now, cost, params, slack);
    if (!r.allowed) {
      const lockout = lockouts[0];
      if (!peek && r.retryAfter >= 0 && lockout !== undefined) {
        return this.lockOut(keys, 0, lockout, this.lockoutLevel(keys, now), now);
      }
      // With one policy there is no other key to describe as it stands.
      return { admitted: false, results: [r] };
    }
    if (!peek && cost > 0) {
      if (entry !== undefined) {
        entry.state = r.next;
        entry.expiresAt = now + r.ttl!;
      } else {
        if (!this.makeRoom(1, now)) return this.full([algorithm], [params], [state], now);
        const created: Entry = { state: r.next, expiresAt: now + r.ttl! };
        this.entries.set(key, created);
        if (slots !== undefined) slots[0] = created;
      }
      this.startSweeper();
    }
    return { admitted: true, results: [r] };
  }

  /** Whether every key can be stored, sweeping expired keys (at most once a second) if not. */
  private makeRoom(missing: number, now: number): boolean {
    if (this.entries.size + missing <= this.maxKeys) return true;
    if (now - this.lastFullSweep < FULL_SWEEP_SPACING_US) return false;
    this.lastFullSweep = now;
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.drop(key, entry);
    return this.entries.size + missing <= this.maxKeys;
  }

  private full(
    algorithms: readonly Algorithm[],
    params: readonly (readonly number[])[],
    states: readonly unknown[],
    now: number,
  ): StoreDecision {
    const results: StoreResult[] = algorithms.map((algorithm, i) => ({
      ...algorithm.check(states[i], now, 0, params[i]!),
      allowed: false,
      retryAfter: FULL_SWEEP_SPACING_US,
    }));
    return { admitted: false, results, reason: 'store-full' };
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }
}
