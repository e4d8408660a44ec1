/**
 * Live limits for every key (`setLimit('*', …)`): one record per limiter, which every process
 * holds and sends with each decision, and which each key's next call carries it to lazily
 * (lua/include/live.lua: the key's mark says which global parameters its states are kept in).
 * The record, the spec a call sends and a key's mark share one encoding, made here.
 * docs/algorithms.md#live-limits
 */
import {
  type Carry,
  type LimitChange,
  limitsLifetimeMs,
  type OverrideEntry,
  type StoredLimits,
  StoredLimitsReader,
  storedValue,
} from './live-limits.js';
import type { Policy } from './policy.js';

/** The key that means every key in setLimit, getLimit and clearLimit. */
export const EVERY_KEY = '*';

/**
 * The longest a process may go on deciding with a global override it no longer holds (ms): it
 * reads the limiter's record at least this often.
 */
export const GLOBAL_POLL_MS = 500;

/** The bound documented for a '*' change to reach every process (ms). */
export const GLOBAL_BOUND_MS = 1000;

/** A limiter's override for every key, as a process holds it. */
export interface GlobalLimits {
  /** Unique per change (the store's time of the change, µs). */
  readonly version: string;
  /** µs (store clock) when it lapses; 0: never. */
  readonly expiresAt: number;
  readonly carry: Carry;
  /** How long a key's mark lives after its last call (ms). */
  readonly markMs: number;
  /** No entries: cleared (the record stays until every key's mark is gone). */
  readonly entries: readonly OverrideEntry[];
  /** The record as stored and as the Redis script takes it (GLOBAL_SPEC). */
  readonly spec: string;
  /** The limiter's policies with the global entries in. */
  readonly policies: readonly Policy[];
}

/**
 * The record a change of every key makes at `now` (µs, the store's clock), after `previous`:
 * '<version>|<expires µs>|<carry>|<mark PX ms>|<entries>'. As for one key, the change's entries
 * replace those of their policies and keep the others in force (a lapsed one is gone); no
 * entries clear them all. The ttl and carry are the change's. The version is above `previous`'s.
 * The marks' PX never shrinks while a record lives, so a cleared record outlives the marks of
 * every earlier one.
 */
export function globalSpec(
  policies: readonly Policy[],
  change: LimitChange,
  now: number,
  previous: GlobalLimits | undefined,
): string {
  const merged = new Map<number, OverrideEntry>();
  if (change.entries.length > 0) {
    if (globalActive(previous, now)) for (const e of previous!.entries) merged.set(e.index, e);
    for (const e of change.entries) merged.set(e.index, e);
  }
  const kept = sortEntries([...merged.values()]);
  const markMs = Math.max(
    limitsLifetimeMs(policies, { ...change, entries: kept, ttl: 0 }),
    previous?.markMs ?? 0,
  );
  const expiresAt = change.ttl > 0 ? now + change.ttl : 0;
  // The stored per-key value holds '<expires>|<carry>|<entries>': the entries part is the same.
  const entries = storedValue(policies, kept, 0, change.carry).replace(/^0\|[a-z-]+\|/, '');
  // Unique per change, even two in one tick of an injected clock.
  const version = previous
    ? BigInt(previous.version) + 1n > BigInt(Math.floor(now))
      ? BigInt(previous.version) + 1n
      : BigInt(Math.floor(now))
    : BigInt(Math.floor(now));
  return `${version}|${expiresAt}|${change.carry}|${markMs}|${entries}`;
}

/** How long the record is kept (ms): none while active without a ttl, else past every mark. */
export function globalRecordMs(global: GlobalLimits, now: number): number | undefined {
  if (global.entries.length === 0) return global.markMs;
  if (global.expiresAt === 0) return undefined;
  return Math.ceil((global.expiresAt - now) / 1000) + global.markMs;
}

function sortEntries(entries: readonly OverrideEntry[]): OverrideEntry[] {
  return [...entries].sort((a, b) => a.index - b.index);
}

/** Reads records back, kept per distinct spec. */
export class GlobalReader {
  private readonly reader: StoredLimitsReader;
  private readonly cache = new Map<string, GlobalLimits>();

  constructor(private readonly policies: readonly Policy[]) {
    this.reader = new StoredLimitsReader(policies);
  }

  /** A record, or undefined for none. */
  readMaybe(spec: string | null | undefined): GlobalLimits | undefined {
    return spec ? this.read(spec) : undefined;
  }

  read(spec: string): GlobalLimits {
    let found = this.cache.get(spec);
    if (found !== undefined) return found;
    const match = /^(\d+)\|(\d+)\|([a-z-]+)\|(\d+)\|(.*)$/.exec(spec);
    if (!match) throw new Error(`unreadable global live limits: ${JSON.stringify(spec)}`);
    const stored = this.reader.read(`0|${match[3]}|${match[5]}`);
    found = Object.freeze({
      version: match[1]!,
      expiresAt: Number(match[2]),
      carry: match[3] as Carry,
      markMs: Number(match[4]),
      entries: stored.entries,
      spec,
      policies: stored.policies,
    });
    if (this.cache.size >= 100) this.cache.clear();
    this.cache.set(spec, found);
    return found;
  }
}

/** Whether `global` still applies at `now` (µs). */
export function globalActive(global: GlobalLimits | undefined, now: number): boolean {
  return (
    global !== undefined &&
    global.entries.length > 0 &&
    (global.expiresAt === 0 || global.expiresAt > now)
  );
}

/**
 * A key's overrides as a decision reads them: its own (`stored`) beat the global ones, which
 * fill in the other policies. The entries from the global record carry its expiry.
 */
export function combineLimits(
  policies: readonly Policy[],
  global: GlobalLimits,
  stored: StoredLimits | undefined,
): StoredLimits {
  const own = new Set(stored?.entries.map((e) => e.index));
  const fromGlobal = global.entries
    .filter((e) => !own.has(e.index))
    .map((e) => ({ ...e, ...(global.expiresAt > 0 ? { expiresAt: global.expiresAt } : {}) }));
  const entries = sortEntries([...(stored?.entries ?? []), ...fromGlobal]);
  const combined = [...policies];
  for (const e of entries) combined[e.index] = e.policy;
  return {
    policies: Object.freeze(combined),
    entries,
    expiresAt: stored?.expiresAt ?? 0,
    carry: stored?.carry ?? global.carry,
  };
}
