/**
 * The in-memory store: runs the TypeScript twins of the Lua scripts in this process, with the
 * same all-or-nothing rule, so a single instance gets the same answers Redis would give.
 */
import { ALGORITHMS, type CheckResult } from '../algorithms/index.js';
import { type Clock, processClock, readClockOption, readMicros } from '../clock.js';
import type { StoreDecision, StoreResult } from '../decision.js';
import { configError, positiveInteger, readOptions } from '../options.js';
import type { Lockout, Policy } from '../policy.js';
import { type LeaseTaken, takeLease } from './lease-take.js';
import {
  BlockTable,
  chargeStates,
  extendDenied,
  longestLockout,
  refundStates,
} from './memory-blocks.js';
import { memoryLeases } from './memory-leases.js';
import { type LiveHost, type LiveRecord, prepareLive } from './memory-live.js';
import {
  DEFAULT_MAX_KEYS,
  type Entry,
  FULL_SWEEP_SPACING_US,
  MEMORY_STORE_OPTION_NAMES,
  type MemoryStoreOptions,
  type Plan,
  SWEEP_INTERVAL_MS,
} from './memory-options.js';
import { dropMatching, limiterKeyMatcher } from './reset-all.js';
import type { PreparedPolicies, PrepareOptions, Store, StoreLeases } from './store.js';

export type { MemoryStoreOptions } from './memory-options.js';

/**
 * A store in this process's memory: runs the TypeScript twins, which give the same answers as
 * the Redis scripts. For a single instance, tests, or as a fallback (`onStoreError`). Bounded
 * by `maxKeys`; a live counter is never evicted (a full table denies new keys instead).
 *
 * @example
 * ```ts
 * import { gcra, memoryStore, RateLimiter } from '@floodgate/core';
 *
 * const limiter = new RateLimiter({
 *   store: memoryStore({ maxKeys: 100_000 }),
 *   policies: gcra({ limit: 10, window: '1s', burst: 20 }),
 * });
 * ```
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  return new MemoryStore(options);
}

export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly maxKeys: number;
  /** The store's time source (ConcurrencyLimiter reads it too). */
  readonly clock: Clock;
  private readonly entries = new Map<string, Entry>();
  private readonly blocks = new BlockTable();
  private sweeper: NodeJS.Timeout | undefined;
  private lastFullSweep = Number.NEGATIVE_INFINITY;

  constructor(options: MemoryStoreOptions = {}) {
    const o = readOptions(options, 'memoryStore', MEMORY_STORE_OPTION_NAMES);
    this.clock = readClockOption(o.clock, 'memoryStore.clock') ?? processClock;
    this.maxKeys =
      o.maxKeys === undefined
        ? DEFAULT_MAX_KEYS
        : positiveInteger(o.maxKeys, 'memoryStore.maxKeys');
  }

  /** Keys currently held (expired ones may linger until the next sweep). */
  get size(): number {
    return this.entries.size;
  }

  /** Every key's live limits (memory-live.ts), shared by this store's limiters. */
  private readonly overrides = new Map<string, LiveRecord>();

  /** One entry per policy whatever `stateKeys` asks: the twins keep each policy's state apart. */
  prepare(policies: readonly Policy[], options?: PrepareOptions): PreparedPolicies {
    if (options?.liveLimits === true) {
      return prepareLive(this.liveHost(), policies, options.globalKey);
    }
    const algorithms = policies.map((p, i) => {
      const algorithm = ALGORITHMS[p.kind];
      if (!algorithm)
        throw configError(`policies[${i}].kind`, p.kind, 'an algorithm this version knows');
      return algorithm;
    });
    const plan: Plan = {
      algorithms,
      params: policies.map((p) => p.params),
      lockouts: policies.map((p) => p.lockout),
    };
    const n = policies.length;
    const decideNow: NonNullable<PreparedPolicies['decideNow']> = (keys, cost, peek, slots) => {
      const now = readMicros(this.clock);
      if (!this.blocks.empty) {
        const blocked = this.blocks.blockedAnswer(keys[n]!, now);
        if (blocked !== undefined) return blocked;
      }
      return this.decide(plan, keys, cost, peek, 0, now, slots);
    };
    return {
      decide: async (keys, cost, peek) => decideNow(keys, cost, peek),
      decideNow,
      reserve: async (keys, cost, slack) => {
        const now = readMicros(this.clock);
        const blocked = this.blocks.blockedAnswer(keys[n]!, now);
        if (blocked !== undefined) return blocked;
        return this.decide(plan, keys, cost, false, slack, now);
      },
      reset: async (keys) => {
        for (const key of keys.slice(0, n)) {
          const entry = this.entries.get(key);
          if (entry !== undefined) this.drop(key, entry);
        }
        this.blocks.delete(keys[n]!);
      },
      refund: async (keys, cost) => {
        if (cost > 0)
          refundStates(plan, keys, cost, readMicros(this.clock), this.entries, this.drop);
        return decideNow(keys, 0, true);
      },
      charge: async (keys, cost) => {
        const now = readMicros(this.clock);
        chargeStates(plan, keys, cost, now, this.entries, () => this.makeRoom(1, now));
        this.startSweeper();
        return decideNow(keys, 1, true);
      },
      set: async (keys, used) => {
        const now = readMicros(this.clock);
        for (const key of keys.slice(0, n)) {
          const entry = this.entries.get(key);
          if (entry !== undefined) this.drop(key, entry);
        }
        chargeStates(plan, keys, used, now, this.entries, () => this.makeRoom(1, now));
        this.startSweeper();
        return decideNow(keys, 1, true);
      },
      take: async (keys, want) => {
        const now = readMicros(this.clock);
        const blocked = this.blocks.blockedAnswer(keys[n]!, now);
        if (blocked !== undefined) return { ...blocked, granted: 0 };
        return this.take(plan, keys, want, now);
      },
      block: async (keys, micros) => {
        this.blocks.blockByHand(keys[n]!, micros, readMicros(this.clock));
        this.startSweeper();
      },
      unblock: async (keys) => {
        this.blocks.delete(keys[n]!);
      },
      resetAll: async (head, tails) => {
        const matches = limiterKeyMatcher(head, tails);
        return dropMatching(this.entries, matches, this.drop) + this.blocks.deleteWhere(matches);
      },
    };
  }

  /** What memory-live.ts needs of this store. */
  private liveHost(): LiveHost {
    return {
      clock: this.clock,
      overrides: this.overrides,
      prepare: (policies) => this.prepare(policies),
      state: (key, now) => {
        const entry = this.entries.get(key);
        return entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
      },
      write: (key, state, expiresAt) => {
        const entry = this.entries.get(key);
        if (entry !== undefined) {
          entry.state = state;
          entry.expiresAt = expiresAt;
        } else {
          this.entries.set(key, { state, expiresAt });
        }
        this.startSweeper();
      },
      remove: (key) => {
        const entry = this.entries.get(key);
        if (entry !== undefined) this.drop(key, entry);
      },
    };
  }

  /** Policy `i` locks the key out (docs/algorithms.md#blocks); its state starts fresh. */
  private lockOut(keys: readonly string[], i: number, lockout: Lockout, now: number) {
    const entry = this.entries.get(keys[i]!);
    if (entry !== undefined) this.drop(keys[i]!, entry);
    this.startSweeper();
    return this.blocks.lockOut(keys[keys.length - 1]!, i, lockout, now);
  }

  /** The leases of ConcurrencyLimiter, in this store's table (memory-leases.ts). */
  leases(): StoreLeases {
    return memoryLeases({
      clock: this.clock,
      fullRetry: FULL_SWEEP_SPACING_US,
      read: (key, now) => {
        const entry = this.entries.get(key);
        return entry !== undefined && entry.expiresAt > now
          ? (entry.state as Map<string, number>)
          : undefined;
      },
      write: (key, leases, expiresAt, now) => {
        const entry = this.entries.get(key);
        if (entry !== undefined) {
          entry.state = leases;
          entry.expiresAt = expiresAt;
        } else {
          if (!this.makeRoom(1, now)) return false;
          this.entries.set(key, { state: leases, expiresAt });
        }
        this.startSweeper();
        return true;
      },
      delete: (key) => {
        const entry = this.entries.get(key);
        if (entry !== undefined) this.drop(key, entry);
      },
    });
  }

  /** A lease take (stores/lease-take.ts): the twin decides, and a grant is written in place. */
  private take(plan: Plan, keys: readonly string[], want: number, now: number): LeaseTaken {
    const n = plan.algorithms.length;
    const found = keys.slice(0, n).map((key) => this.entries.get(key));
    const states = found.map((e) => (e !== undefined && e.expiresAt > now ? e.state : undefined));
    const { granted, results } = takeLease(plan, states, now, want);
    if (granted > 0) {
      const missing = found.filter((e) => e === undefined).length;
      if (missing > 0 && !this.makeRoom(missing, now, found)) {
        return { ...this.full(plan, states, now), granted: 0 };
      }
      for (let i = 0; i < n; i++) {
        const r = results[i]!;
        if (r.next === undefined) continue;
        const entry = found[i];
        if (entry !== undefined) {
          entry.state = r.next;
          entry.expiresAt = now + r.ttl!;
        } else {
          this.entries.set(keys[i]!, { state: r.next, expiresAt: now + r.ttl! });
        }
      }
      this.startSweeper();
    }
    return { admitted: granted > 0, results, granted };
  }

  /** Drops every expired key now. */
  sweep(): number {
    const now = readMicros(this.clock);
    const expired = (_: string, entry: Entry) => entry.expiresAt <= now;
    return dropMatching(this.entries, expired, this.drop) + this.blocks.sweep(now);
  }

  private readonly drop = (key: string, entry: Entry): void => {
    this.entries.delete(key);
    entry.dropped = true;
  };

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
    plan: Plan,
    keys: readonly string[],
    cost: number,
    peek: boolean,
    slack: number,
    now: number,
    slots?: unknown[],
  ): StoreDecision {
    const { algorithms, params, lockouts } = plan;
    const n = algorithms.length;
    if (n === 1) return this.decideOne(plan, keys, cost, peek, slack, now, slots);
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
        if (missing > 0 && !this.makeRoom(missing, now, found)) {
          return this.full(plan, states, now);
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
      if (cost > 0) for (let i = 0; i < n; i++) extendDenied(found[i], results[i]!, now);
      const by = longestLockout(results, lockouts, this.blocks.level(keys[n]!, now));
      if (by >= 0) return this.lockOut(keys, by, lockouts[by]!, now);
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
    plan: Plan,
    keys: readonly string[],
    cost: number,
    peek: boolean,
    slack: number,
    now: number,
    slots?: unknown[],
  ): StoreDecision {
    const algorithm = plan.algorithms[0]!;
    const params = plan.params[0]!;
    const key = keys[0]!;
    const entry = this.entryOf(key, slots?.[0]);
    if (slots !== undefined) slots[0] = entry;
    const state = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
    const r = algorithm.check(state, now, cost, params, slack);
    if (!r.allowed) {
      if (!peek && cost > 0) extendDenied(entry, r, now);
      const lockout = plan.lockouts[0];
      if (!peek && r.retryAfter >= 0 && lockout) return this.lockOut(keys, 0, lockout, now);
      return { admitted: false, results: [r] }; // no other key to describe as it stands
    }
    if (!peek && cost > 0) {
      if (entry !== undefined) {
        entry.state = r.next;
        entry.expiresAt = now + r.ttl!;
      } else {
        if (!this.makeRoom(1, now)) return this.full(plan, [state], now);
        const created: Entry = { state: r.next, expiresAt: now + r.ttl! };
        this.entries.set(key, created);
        if (slots !== undefined) slots[0] = created;
      }
      this.startSweeper();
    }
    return { admitted: true, results: [r] };
  }

  /** Whether every key fits, sweeping expired ones (once a second) but the decision's own. */
  private makeRoom(missing: number, now: number, keep: readonly (Entry | undefined)[] = []) {
    if (this.entries.size + missing <= this.maxKeys) return true;
    if (now - this.lastFullSweep < FULL_SWEEP_SPACING_US) return false;
    this.lastFullSweep = now;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now && !keep.includes(entry)) this.drop(key, entry);
    }
    return this.entries.size + missing <= this.maxKeys;
  }

  private full({ algorithms, params }: Plan, states: readonly unknown[], now: number) {
    const results: StoreResult[] = algorithms.map((algorithm, i) => ({
      ...algorithm.check(states[i], now, 0, params[i]!),
      allowed: false,
      retryAfter: FULL_SWEEP_SPACING_US,
    }));
    return { admitted: false, results, reason: 'store-full' } satisfies StoreDecision;
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
  }
}
