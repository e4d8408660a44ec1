/**
 * Live limits on the memory store: the twin of lua/include/live.lua. A key's overrides are kept
 * as the same string the Redis script stores, in the store's own table of overrides; each call
 * reads them first and decides with the overridden parameters, a change (or a lapse) rewrites
 * the overridden policies' states as its carry says, with the same steps as the script.
 */
import { ALGORITHMS } from '../algorithms/index.js';
import { type Clock, readMicros } from '../clock.js';
import type { StoreDecision } from '../decision.js';
import {
  type Carry,
  carriedRemaining,
  type LimitChange,
  type OverrideEntry,
  type StoredLimits,
  StoredLimitsReader,
  storedValue,
} from '../live-limits.js';
import type { Policy } from '../policy.js';
import { limiterKeyMatcher } from './reset-all.js';
import type { PreparedPolicies } from './store.js';

/**
 * A key's overrides in the memory store: the string the Redis script stores. Kept until
 * clearLimit, or until the first call after its ttl lapsed (which carries the key back); the
 * Redis key's PX (the ttl plus twice its states' lifetime) only ever drops a key whose states
 * are gone, where carrying back changes nothing.
 */
export interface LiveRecord {
  readonly value: string;
}

/** What the live layer needs of the memory store. */
export interface LiveHost {
  readonly clock: Clock;
  /** Every key's overrides (shared by the store's limiters, as Redis keys are). */
  readonly overrides: Map<string, LiveRecord>;
  /** The store's own preparation of these policies (no live limits). */
  prepare(policies: readonly Policy[]): PreparedPolicies;
  /** The state stored at `key`, if it has not expired at `now`. */
  state(key: string, now: number): unknown;
  /** Stores `state` at `key` until `expiresAt`. */
  write(key: string, state: unknown, expiresAt: number): void;
  remove(key: string): void;
}

/** The policies of a limiter with live limits, prepared on the memory store. */
export function prepareLive(host: LiveHost, policies: readonly Policy[]): PreparedPolicies {
  return new LiveMemory(host, policies).prepared();
}

class LiveMemory {
  private readonly n: number;
  private readonly base: PreparedPolicies;
  private readonly reader: StoredLimitsReader;
  private readonly byValue = new WeakMap<StoredLimits, PreparedPolicies>();

  constructor(
    private readonly host: LiveHost,
    private readonly policies: readonly Policy[],
  ) {
    this.n = policies.length;
    this.base = host.prepare(policies);
    this.reader = new StoredLimitsReader(policies);
  }

  prepared(): PreparedPolicies {
    const inner = (keys: readonly string[]) => keys.slice(0, this.n + 1);
    const decideNow = (keys: readonly string[], cost: number, peek: boolean): StoreDecision => {
      const { prepared, stored } = this.current(keys);
      return withLive(prepared.decideNow!(inner(keys), cost, peek), stored);
    };
    return {
      decide: async (keys, cost, peek) => decideNow(keys, cost, peek),
      decideNow,
      reserve: async (keys, cost, slack) => {
        const { prepared, stored } = this.current(keys);
        return withLive(await prepared.reserve!(inner(keys), cost, slack), stored);
      },
      // Every call reads the key's overrides first, as the script does: a lapse is carried
      // back by whatever call comes first.
      reset: (keys) => {
        this.current(keys);
        return this.base.reset(inner(keys));
      },
      refund: async (keys, cost) => {
        const { prepared, stored } = this.current(keys);
        return withLive(await prepared.refund(inner(keys), cost), stored);
      },
      charge: async (keys, cost) => {
        const { prepared, stored } = this.current(keys);
        return withLive(await prepared.charge!(inner(keys), cost), stored);
      },
      block: (keys, micros) => {
        this.current(keys);
        return this.base.block(inner(keys), micros);
      },
      unblock: (keys) => {
        this.current(keys);
        return this.base.unblock(inner(keys));
      },
      resetAll: async (head, tails) => {
        const matches = limiterKeyMatcher(head, tails);
        let dropped = 0;
        for (const key of this.host.overrides.keys()) {
          if (matches(key)) {
            this.host.overrides.delete(key);
            dropped++;
          }
        }
        return dropped + (await this.base.resetAll!(head, tails));
      },
      changeLimits: async (keys, change) => this.change(keys, change),
    };
  }

  /** The key's overrides now (a lapsed one carried back first), and how to decide with them. */
  private current(keys: readonly string[]): {
    prepared: PreparedPolicies;
    stored?: StoredLimits;
  } {
    const limitsKey = keys[this.n + 1]!;
    const record = this.host.overrides.get(limitsKey);
    if (record === undefined) return { prepared: this.base };
    const now = readMicros(this.host.clock);
    const stored = this.reader.read(record.value);
    if (stored.expiresAt > 0 && stored.expiresAt <= now) {
      // Lapsed: each overridden policy goes back to the limiter's parameters.
      for (const e of stored.entries) {
        this.carry(keys[e.index]!, e.policy, this.policies[e.index]!, stored.carry, now);
      }
      this.host.overrides.delete(limitsKey);
      return { prepared: this.base };
    }
    let prepared = this.byValue.get(stored);
    if (prepared === undefined) {
      prepared = this.host.prepare(stored.policies);
      this.byValue.set(stored, prepared);
    }
    return { prepared, stored };
  }

  /** changeLimits, as lua/include/live.lua's MODE 'a'. */
  private change(keys: readonly string[], change: LimitChange): void {
    // A lapsed override is carried back first (as any call does).
    const stored = this.current(keys).stored;
    const now = readMicros(this.host.clock);
    const limitsKey = keys[this.n + 1]!;
    const old = new Map<number, OverrideEntry>();
    for (const e of stored?.entries ?? []) old.set(e.index, e);
    // The asked entries replace the stored ones of their policies; none at all clears them all.
    const next = new Map<number, OverrideEntry>();
    if (change.entries.length > 0) {
      for (const [i, e] of old) next.set(i, e);
      for (const e of change.entries) next.set(e.index, e);
    }
    for (let i = 0; i < this.n; i++) {
      const from = old.get(i);
      const to = next.get(i);
      if ((from === undefined && to === undefined) || from === to) continue;
      const fromPolicy = from?.policy ?? this.policies[i]!;
      const toPolicy = to?.policy ?? this.policies[i]!;
      const same =
        change.carry !== 'reset' && fromPolicy.params.every((v, j) => v === toPolicy.params[j]);
      if (!same) this.carry(keys[i]!, fromPolicy, toPolicy, change.carry, now);
    }
    const entries = [...next.values()].sort((a, b) => a.index - b.index);
    if (entries.length === 0) {
      this.host.overrides.delete(limitsKey);
      return;
    }
    const expiresAt = change.ttl > 0 ? now + change.ttl : 0;
    const value = storedValue(this.policies, entries, expiresAt, change.carry);
    this.host.overrides.set(limitsKey, { value });
  }

  /**
   * Rewrites the state at `key` from policy `from`'s parameters to `to`'s as `carry` says: the
   * remaining whole units (a read of cost 0) carried, the state cleared, and the units used
   * charged as a fresh key admits them (lua/include/live.lua's carry_policy).
   */
  private carry(key: string, from: Policy, to: Policy, carry: Carry, now: number): void {
    const twin = ALGORITHMS[from.kind]!;
    const remaining = twin.check(this.host.state(key, now), now, 0, from.params).remaining;
    const left = carriedRemaining(carry, remaining, from.capacity, to.capacity);
    this.host.remove(key);
    const used = to.capacity - left;
    if (used <= 0) return;
    const r = twin.check(undefined, now, used, to.params);
    if (r.allowed && r.next !== undefined) this.host.write(key, r.next, now + r.ttl!);
  }
}

function withLive(decision: StoreDecision, stored: StoredLimits | undefined): StoreDecision {
  return stored === undefined ? decision : { ...decision, policies: stored.policies, live: stored };
}
