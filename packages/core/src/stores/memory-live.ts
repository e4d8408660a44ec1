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
  combineLimits,
  type GlobalLimits,
  GlobalReader,
  globalActive,
  globalSpec,
} from '../live-global.js';
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
export function prepareLive(
  host: LiveHost,
  policies: readonly Policy[],
  globalKey?: string,
): PreparedPolicies {
  return new LiveMemory(host, policies, globalKey).prepared();
}

/** A key's mark of the override for every key (lua/include/live.lua's MARK_KEY). */
interface GlobalMark {
  readonly version: string;
  /** The global entries the key's states are kept in. */
  readonly entries: readonly OverrideEntry[];
}

/** What the global step leaves for the rest of a call (the script's HELD and mark_global). */
interface GlobalStep {
  /** The limiter's policies with every global entry in (what a key's own override falls to). */
  readonly held: readonly Policy[];
  readonly global: GlobalLimits;
  /** Writes the key's mark for its own overrides `skip`: true when global entries apply. */
  mark(skip: ReadonlySet<number>): boolean;
}

class LiveMemory {
  private readonly n: number;
  private readonly base: PreparedPolicies;
  private readonly reader: StoredLimitsReader;
  private readonly byValue = new WeakMap<StoredLimits, PreparedPolicies>();
  private readonly globals: GlobalReader;
  /** Each (global version, stored value) pair's combined overrides, made once. */
  private readonly combined = new Map<string, StoredLimits>();

  constructor(
    private readonly host: LiveHost,
    private readonly policies: readonly Policy[],
    private readonly globalKey: string | undefined,
  ) {
    this.n = policies.length;
    this.base = host.prepare(policies);
    this.reader = new StoredLimitsReader(policies);
    this.globals = new GlobalReader(policies);
  }

  /** The override for every key, as this store holds it (applies at once: one process). */
  private global(): GlobalLimits | undefined {
    if (this.globalKey === undefined) return undefined;
    return this.globals.readMaybe(this.host.overrides.get(this.globalKey)?.value);
  }

  /** setLimit('*') / clearLimit('*'): the record, as the Redis store writes it. */
  private changeGlobal(change: LimitChange): void {
    const now = readMicros(this.host.clock);
    const spec = globalSpec(this.policies, change, now, this.global());
    this.host.overrides.set(this.globalKey!, { value: spec });
  }

  /**
   * lua/include/live.lua's global step: carries the key's policies without an override of their
   * own from the global entries of its mark (or the limiter's parameters) to the current ones.
   */
  private globalStep(
    keys: readonly string[],
    global: GlobalLimits,
    own: ReadonlySet<number>,
    now: number,
  ): GlobalStep {
    const lapsed = global.expiresAt > 0 && global.expiresAt <= now;
    const wanted = new Map<number, OverrideEntry>();
    if (!lapsed) for (const e of global.entries) wanted.set(e.index, e);
    // The key's last key, in the store's table of states (its block and overrides are in
    // tables of their own).
    const markKey = keys[this.n]!;
    let mark = this.host.state(markKey, now) as GlobalMark | undefined;
    const kept = (skip: ReadonlySet<number>) =>
      [...wanted.values()].filter((e) => !skip.has(e.index));
    const matches = (m: GlobalMark | undefined, entries: readonly OverrideEntry[]) =>
      entries.length > 0 &&
      m?.version === global.version &&
      m.entries.length === entries.length &&
      m.entries.every((e, j) => e.index === entries[j]!.index);
    if (!matches(mark, kept(own)) && !(mark === undefined && kept(own).length === 0)) {
      const marked = new Map(mark?.entries.map((e) => [e.index, e]));
      for (let i = 0; i < this.n; i++) {
        const from = marked.get(i);
        const to = wanted.get(i);
        if (own.has(i) || (from === undefined && to === undefined)) continue;
        const fromPolicy = from?.policy ?? this.policies[i]!;
        const toPolicy = to?.policy ?? this.policies[i]!;
        // 'reset' empties a key once per version; the others carry only a change of parameters.
        const same =
          (global.carry !== 'reset' || mark?.version === global.version) &&
          fromPolicy.params.every((v, j) => v === toPolicy.params[j]);
        if (!same) this.carry(keys[i]!, fromPolicy, toPolicy, global.carry, now);
      }
    }
    const held = [...this.policies];
    for (const e of wanted.values()) held[e.index] = e.policy;
    return {
      held,
      global: lapsed ? { ...global, entries: [] } : global,
      mark: (skip) => {
        const entries = kept(skip);
        if (entries.length === 0) {
          if (mark !== undefined) this.host.remove(markKey);
          mark = undefined;
          return false;
        }
        if (!matches(mark, entries)) mark = { version: global.version, entries };
        // Each call renews the mark, so it outlives every state it describes.
        this.host.write(markKey, mark, now + global.markMs * 1000);
        return true;
      },
    };
  }

  /** A decision's policies: the key's own overrides, then the global ones that apply. */
  private withGlobal(global: GlobalLimits, stored: StoredLimits | undefined): StoredLimits {
    const id = `${global.version}/${global.entries.length}/${stored === undefined ? '' : storedValue(this.policies, stored.entries, stored.expiresAt, stored.carry)}`;
    let found = this.combined.get(id);
    if (found === undefined) {
      found = combineLimits(this.policies, global, stored);
      if (this.combined.size >= 1000) this.combined.clear();
      this.combined.set(id, found);
    }
    return found;
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
          // The limiter's override for every key goes too.
          if (matches(key) || key === this.globalKey) {
            this.host.overrides.delete(key);
            dropped++;
          }
        }
        return dropped + (await this.base.resetAll!(head, tails));
      },
      changeLimits: async (keys, change) => this.change(keys, change),
      ...(this.globalKey !== undefined && {
        changeGlobal: async (change) => this.changeGlobal(change),
        readGlobal: async () => {
          const global = this.global();
          return globalActive(global, readMicros(this.host.clock)) ? global : undefined;
        },
      }),
    };
  }

  /** The key's overrides now (a lapsed one carried back first), and how to decide with them. */
  private current(keys: readonly string[]): {
    prepared: PreparedPolicies;
    stored?: StoredLimits;
    step?: GlobalStep;
  } {
    const limitsKey = keys[this.n]!;
    const record = this.host.overrides.get(limitsKey);
    const global = this.global();
    if (record === undefined && global === undefined) return { prepared: this.base };
    const now = readMicros(this.host.clock);
    let stored = record === undefined ? undefined : this.reader.read(record.value);
    const own = new Set(stored?.entries.map((e) => e.index));
    const step = global && this.globalStep(keys, global, own, now);
    const held = step?.held ?? this.policies;
    if (stored !== undefined && stored.expiresAt > 0 && stored.expiresAt <= now) {
      // Lapsed: each overridden policy goes back to the limiter's parameters (or the global ones).
      for (const e of stored.entries) {
        this.carry(keys[e.index]!, e.policy, held[e.index]!, stored.carry, now);
      }
      this.host.overrides.delete(limitsKey);
      stored = undefined;
    }
    const applied = step?.mark(new Set(stored?.entries.map((e) => e.index))) ?? false;
    const live = applied ? this.withGlobal(step!.global, stored) : stored;
    if (live === undefined) return { prepared: this.base, ...(step && { step }) };
    let prepared = this.byValue.get(live);
    if (prepared === undefined) {
      prepared = this.host.prepare(live.policies);
      this.byValue.set(live, prepared);
    }
    return { prepared, stored: live, ...(step && { step }) };
  }

  /** changeLimits, as lua/include/live.lua's MODE 'a'. */
  private change(keys: readonly string[], change: LimitChange): void {
    // A lapsed override is carried back first (as any call does).
    const { step } = this.current(keys);
    const record = this.host.overrides.get(keys[this.n]!);
    const stored = record === undefined ? undefined : this.reader.read(record.value);
    const held = step?.held ?? this.policies;
    const now = readMicros(this.host.clock);
    const limitsKey = keys[this.n]!;
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
      const fromPolicy = from?.policy ?? held[i]!;
      const toPolicy = to?.policy ?? held[i]!;
      const same =
        change.carry !== 'reset' && fromPolicy.params.every((v, j) => v === toPolicy.params[j]);
      if (!same) this.carry(keys[i]!, fromPolicy, toPolicy, change.carry, now);
    }
    const entries = [...next.values()].sort((a, b) => a.index - b.index);
    step?.mark(new Set(next.keys()));
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
