/**
 * Live limits: an override replaces one policy's parameters for one key without changing the
 * policy's id, so the key keeps its counts (as `carry` says) and every process's next decision
 * uses it. This file reads and validates overrides (as strictly as the policy factories read
 * options) and encodes them as both stores keep them: a string per key, which the Redis script
 * reads in the same call as the decision (lua/include/live.lua) and the memory store parses the
 * same way (stores/memory-live.ts).
 */
import { REGISTRY } from './algorithms/index.js';
import { type Duration, parseDuration } from './duration.js';
import { RateLimitConfigError } from './errors.js';
import { configError, optionNames, readOptions } from './options.js';
import type { Policy } from './policy.js';

/**
 * What a limit change makes of a key's used units (Bucket4j's TokensInheritanceStrategy), with
 * R the remaining units under the old capacity C and C' the new one:
 * - `'as-is'`: the remaining units stay, capped at C' (min(R, C'));
 * - `'proportional'`: the fraction used stays (C' − ⌈(C − R) · C' / C⌉);
 * - `'additive'`: the used units stay, the difference in capacity is added to what remains
 *   (R + C' − C, between 0 and C');
 * - `'reset'`: the key starts full.
 * A key at its full capacity (idle) stays full whatever the carry.
 * Limit 10 → 20 with 5 used: remaining 5, 10, 15 and 20. docs/algorithms.md#live-limits
 */
export type Carry = 'as-is' | 'proportional' | 'additive' | 'reset';

/** Every carry mode. */
export const CARRY_MODES: readonly Carry[] = Object.freeze([
  'as-is',
  'proportional',
  'additive',
  'reset',
]);

/** @default 'as-is' */
export const DEFAULT_CARRY: Carry = 'as-is';

/**
 * New parameters for one policy of a limiter (by its name), for one key.
 *
 * @example
 * ```ts
 * await limiter.setLimit('customer-42', { policy: 'per-month', limit: 50_000 }, { carry: 'additive' });
 * ```
 */
export interface LimitOverride {
  /** The policy's name (`policy.name`, as decisions and headers show it). */
  policy: string;
  /** The new limit (units per window); 0 admits nothing. */
  limit: number;
  /** The new window. @default the policy's */
  window?: Duration;
  /**
   * The new burst (tokenBucket, gcra, leakyBucket). @default the policy's burst, or the new
   * limit where the policy's burst equals its limit
   */
  burst?: number;
}

/** How `setLimit` treats the key's counts and how long the override lasts. */
export interface SetLimitOptions {
  /** What the used units become under the new parameters. @default 'as-is' */
  carry?: Carry;
  /**
   * The override lapses this long after it is set: the key goes back to the limiter's own
   * parameters (carrying its counts the same way). @default never
   */
  ttl?: Duration;
}

/** `clearLimit`'s options. */
export interface ClearLimitOptions {
  /** What the used units become under the limiter's own parameters. @default 'as-is' */
  carry?: Carry;
}

/** One policy's effective parameters for a key (`getLimit`). */
export interface EffectiveLimit {
  /** Units per window. */
  readonly limit: number;
  /** The window in milliseconds. */
  readonly window: number;
  /** The burst, for the policies that have one. */
  readonly burst?: number;
  /** How many cost-1 requests an idle key admits back to back (decision `limit`). */
  readonly capacity: number;
  /** Whether an override of this key sets them (else they are the policy's own). */
  readonly overridden: boolean;
  /** When the override lapses (epoch ms of the store's clock), if it has a ttl. */
  readonly expiresAt?: number;
}

const OVERRIDE_NAMES = optionNames<LimitOverride>({
  policy: true,
  limit: true,
  window: true,
  burst: true,
});
const SET_OPTION_NAMES = optionNames<SetLimitOptions>({ carry: true, ttl: true });
const CLEAR_OPTION_NAMES = optionNames<ClearLimitOptions>({ carry: true });

/** The policy factories by algorithm kind (`gcra` → gcra()), to build an override's policy. */
const FACTORIES: Readonly<Record<string, (options: object) => Policy>> = Object.fromEntries(
  Object.values(REGISTRY).map((r) => [r.twin.kind, r.factory]),
);

/** Algorithms whose remaining units have no meaning a carry can keep: only 'reset'. */
const RESET_ONLY = new Set(['smooth-bursty', 'smooth-warming-up']);

/** One overridden policy of a key: its index among the limiter's policies, and its new form. */
export interface OverrideEntry {
  readonly index: number;
  readonly policy: Policy;
  /** The override's `burst`, as getLimit shows it (undefined for policies without one). */
  readonly burst: number | undefined;
  /** µs when an entry of the override for every key lapses (else the key's own expiry). */
  readonly expiresAt?: number;
}

/** A change asked of a store: `entries` replace the key's overrides of their policies. */
export interface LimitChange {
  /** No entries: every override of the key goes (clearLimit). */
  readonly entries: readonly OverrideEntry[];
  readonly carry: Carry;
  /** µs until the overrides lapse; 0: never. */
  readonly ttl: number;
}

/** A key's overrides as a store reads them back. */
export interface StoredLimits {
  /** The limiter's policies with the overridden ones replaced. */
  readonly policies: readonly Policy[];
  readonly entries: readonly OverrideEntry[];
  /** µs (store clock) when they lapse; 0: never. */
  readonly expiresAt: number;
  readonly carry: Carry;
}

/** Reads `setLimit(key, override, options)`'s arguments for a limiter of `policies`. */
export function readLimitChange(
  policies: readonly Policy[],
  override: unknown,
  options: unknown,
): LimitChange {
  const list = Array.isArray(override) ? override : [override];
  if (list.length === 0) throw configError('setLimit.override', override, 'at least one override');
  const o = readOptions(options ?? {}, 'setLimit.options', SET_OPTION_NAMES);
  const carry = readCarry(o.carry, 'setLimit.options.carry');
  const ttl = o.ttl === undefined ? 0 : parseDuration(o.ttl, 'setLimit.options.ttl');
  const entries = list.map((item, n) =>
    readOverride(policies, item, list.length === 1 ? 'setLimit' : `setLimit[${n}]`),
  );
  for (const e of entries) {
    if (carry !== 'reset' && RESET_ONLY.has(e.policy.kind)) {
      throw configError(
        'setLimit.options.carry',
        carry,
        `'reset' for a ${e.policy.kind} policy (${e.policy.name}): its stored permits are not units a carry can keep`,
      );
    }
  }
  const seen = new Set(entries.map((e) => e.index));
  if (seen.size !== entries.length) {
    throw configError('setLimit.override', override, 'one override per policy');
  }
  return { entries, carry, ttl };
}

/** Reads `clearLimit(key, options)`'s options: a change with no entries. */
export function readLimitClear(policies: readonly Policy[], options: unknown): LimitChange {
  const o = readOptions(options ?? {}, 'clearLimit.options', CLEAR_OPTION_NAMES);
  const carry = readCarry(o.carry, 'clearLimit.options.carry');
  if (carry !== 'reset') {
    const refused = policies.find((p) => RESET_ONLY.has(p.kind));
    if (refused) {
      throw configError(
        'clearLimit.options.carry',
        carry,
        `'reset' for a limiter with a ${refused.kind} policy (${refused.name})`,
      );
    }
  }
  return { entries: [], carry, ttl: 0 };
}

function readCarry(value: unknown, field: string): Carry {
  if (value === undefined) return DEFAULT_CARRY;
  if (CARRY_MODES.includes(value as Carry)) return value as Carry;
  throw configError(field, value, CARRY_MODES.map((m) => `'${m}'`).join(', '));
}

/** One override, validated by the policy's own factory (errors name `<where>.<field>`). */
function readOverride(policies: readonly Policy[], value: unknown, where: string): OverrideEntry {
  const o = readOptions(value, where, OVERRIDE_NAMES);
  const index = policies.findIndex((p) => p.name === o.policy);
  if (index < 0) {
    throw configError(
      `${where}.policy`,
      o.policy,
      `the name of one of the limiter's policies (${policies.map((p) => p.name).join(', ')})`,
    );
  }
  const base = policies[index]!;
  if (o.limit === undefined) throw configError(`${where}.limit`, o.limit, 'a non-negative integer');
  const options: Record<string, unknown> = { ...base.options, limit: o.limit };
  if (o.window !== undefined) options.window = o.window;
  const hasBurst = 'burst' in base.options;
  if (o.burst !== undefined && !hasBurst) {
    throw configError(`${where}.burst`, o.burst, `absent: a ${base.kind} policy has no burst`);
  }
  if (hasBurst) {
    // A burst that was the limit (the factories' default) follows the new limit.
    const follows = base.options.burst === base.options.limit;
    options.burst = o.burst ?? (follows ? o.limit : base.options.burst);
  }
  const policy = renamed(where, () => FACTORIES[base.kind]!(options));
  const burst = hasBurst ? (policy.options.burst as number) : undefined;
  // The base policy's id and name: the override changes parameters, not identity.
  return { index, policy: { ...policy, id: base.id, name: base.name }, burst };
}

/** Runs a factory so that its errors name `<where>.<field>` (not `gcra.limit`). */
function renamed<T>(where: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof RateLimitConfigError)) throw error;
    const field = error.field.replace(/^[A-Za-z]+\./, `${where}.`);
    const message = error.message
      .split(error.field)
      .join(field)
      .replace(/ \(help: .*\)$/, '');
    throw new RateLimitConfigError(error.code, field, error.value, message, { cause: error });
  }
}

/** Where policy `index`'s group starts in the ARGV after the call's head (its algorithm name). */
function groupOffset(policies: readonly Policy[], index: number): number {
  let o = 0;
  for (let i = 0; i < index; i++) o += 1 + policies[i]!.params.length;
  return o;
}

/**
 * An entry as lua/include/live.lua reads it: '<i> <o> <base capacity> <capacity> <limit>
 * <window µs> <burst or -> <arg>…' (i from 1).
 */
function encodeEntry(policies: readonly Policy[], e: OverrideEntry): string {
  const p = e.policy;
  const head = [
    e.index + 1,
    groupOffset(policies, e.index),
    policies[e.index]!.capacity,
    p.capacity,
    p.limit,
    Math.round(p.window * 1000),
    e.burst ?? '-',
  ];
  return [...head, ...p.params].join(' ');
}

/**
 * A change as the Redis script takes it: '<ttl µs>|<PX ms or ''>|<carry>|<entries>'. The key
 * outlives the ttl by the longest its policies' states can live, so a lapse is always seen by
 * the key's next call while a state kept in the override's parameters may still be there.
 */
export function encodeChange(policies: readonly Policy[], change: LimitChange): string {
  const entries = change.entries.map((e) => encodeEntry(policies, e)).join(';');
  const px = change.ttl > 0 ? String(limitsLifetimeMs(policies, change)) : '';
  return `${change.ttl}|${px}|${change.carry}|${entries}`;
}

/**
 * How long a key's overrides are kept after a change with a ttl (ms): the ttl, then twice the
 * longest any state of these policies (or their overrides) can live, and a second.
 */
export function limitsLifetimeMs(policies: readonly Policy[], change: LimitChange): number {
  const all = [...policies, ...change.entries.map((e) => e.policy)];
  let longest = 0;
  for (const p of all) {
    const fill = p.limit > 0 ? (p.window * Math.max(p.capacity, 1)) / p.limit : p.window;
    const warmup = typeof p.options.warmup === 'number' ? p.options.warmup : 0;
    // A smoothBursty key is kept for its retention (an hour at least) once its permits are full.
    const retention = p.kind === 'smooth-bursty' ? Number(p.params[3]) / 1000 : 0;
    longest = Math.max(longest, p.window, fill, warmup, retention);
  }
  return Math.ceil(change.ttl / 1000) + Math.ceil(2 * longest) + 1000;
}

/** Reads stored overrides back ('<expires µs>|<carry>|<entries>'), kept per distinct value. */
export class StoredLimitsReader {
  private readonly cache = new Map<string, StoredLimits>();

  constructor(private readonly policies: readonly Policy[]) {}

  read(stored: string): StoredLimits {
    let found = this.cache.get(stored);
    if (found === undefined) {
      found = this.parse(stored);
      // Few distinct overrides (plans), so a small bound is plenty; past it, start over.
      if (this.cache.size >= 1000) this.cache.clear();
      this.cache.set(stored, found);
    }
    return found;
  }

  private parse(stored: string): StoredLimits {
    const match = /^(\d+)\|([a-z-]+)\|(.*)$/.exec(stored);
    if (!match) throw new Error(`unreadable live limits: ${JSON.stringify(stored)}`);
    const policies = [...this.policies];
    const entries = match[3]!
      .split(';')
      .filter((s) => s !== '')
      .map((s) => {
        const f = s.split(' ');
        const index = Number(f[0]) - 1;
        const base = this.policies[index];
        if (base === undefined)
          throw new Error(`unreadable live limits: ${JSON.stringify(stored)}`);
        const policy: Policy = Object.freeze({
          ...base,
          capacity: Number(f[3]),
          limit: Number(f[4]),
          window: Number(f[5]) / 1000,
          params: Object.freeze(f.slice(7).map(Number)),
        });
        policies[index] = policy;
        return { index, policy, burst: f[6] === '-' ? undefined : Number(f[6]) };
      });
    return {
      policies: Object.freeze(policies),
      entries,
      expiresAt: Number(match[1]),
      carry: match[2] as Carry,
    };
  }
}

/** What the stores keep per key, from a change applied at `now` (µs): the stored string. */
export function storedValue(
  policies: readonly Policy[],
  entries: readonly OverrideEntry[],
  expiresAt: number,
  carry: Carry,
): string {
  return `${expiresAt}|${carry}|${entries.map((e) => encodeEntry(policies, e)).join(';')}`;
}

/** getLimit's answer: each policy's effective parameters, by name. */
export function effectiveLimits(
  policies: readonly Policy[],
  stored: StoredLimits | undefined,
): Record<string, EffectiveLimit> {
  const out: Record<string, EffectiveLimit> = {};
  policies.forEach((base, i) => {
    const entry = stored?.entries.find((e) => e.index === i);
    const p = entry?.policy ?? base;
    const burst = entry ? entry.burst : (base.options.burst as number | undefined);
    const expiresAt = entry?.expiresAt ?? (entry ? stored!.expiresAt : 0);
    out[base.name] = Object.freeze({
      limit: p.limit,
      window: p.window,
      ...(burst === undefined ? {} : { burst }),
      capacity: p.capacity,
      overridden: entry !== undefined,
      ...(expiresAt > 0 ? { expiresAt: expiresAt / 1000 } : {}),
    });
  });
  return out;
}

/**
 * The carry step, as lua/include/live.lua's carry_policy does it: the remaining whole units
 * under the new capacity `to`, from `remaining` under the old capacity `from`.
 */
export function carriedRemaining(
  carry: Carry,
  remaining: number,
  from: number,
  to: number,
): number {
  // A key at its full capacity (idle, or never used) stays full under any carry.
  if (remaining >= from) return to;
  switch (carry) {
    case 'as-is':
      return Math.min(remaining, to);
    case 'proportional':
      return from > 0 ? to - Math.ceil(((from - remaining) * to) / from) : to;
    case 'additive':
      return Math.max(0, Math.min(to, remaining + to - from));
    case 'reset':
      return to;
  }
}

/** How a store applies a change to a key (`PreparedPolicies.changeLimits`). */
export type ApplyChange = (keys: readonly string[], change: LimitChange) => Promise<void>;

/** What LiveLimits needs of a prepared limiter (stores/store.ts). */
export interface LiveSeam {
  /** The store's changeLimits, when the limiter has live limits and the store holds them. */
  readonly changeLimits?: ApplyChange;
  readonly changeGlobal?: (change: LimitChange) => Promise<void>;
  readonly readGlobal?: () => Promise<
    | {
        readonly policies: readonly Policy[];
        readonly entries: readonly OverrideEntry[];
        readonly expiresAt: number;
      }
    | undefined
  >;
}

/** A limiter's side of live limits: reads the calls' arguments, asks the store to apply them. */
export class LiveLimits {
  private readonly applyChange: ApplyChange | undefined;

  constructor(
    private readonly policies: readonly Policy[],
    private readonly seam: LiveSeam,
    private readonly enabled: boolean,
  ) {
    this.applyChange = seam.changeLimits;
  }

  /** setLimit('*') / clearLimit('*'): the override for every key (live-global.ts). */
  applyGlobal(change: LimitChange): Promise<void> {
    return this.seam.changeGlobal!(change);
  }

  /** getLimit('*'): each policy's parameters under the override for every key, if any. */
  async readGlobal(
    bounded: <T>(read: () => Promise<T>) => Promise<T>,
  ): Promise<Record<string, EffectiveLimit>> {
    this.assertEnabled('getLimit');
    const global = await bounded(() => this.seam.readGlobal!());
    if (global === undefined || global.entries.length === 0) {
      return effectiveLimits(this.policies, undefined);
    }
    const entries = global.entries.map((e) =>
      global.expiresAt > 0 ? { ...e, expiresAt: global.expiresAt } : e,
    );
    return effectiveLimits(this.policies, {
      policies: global.policies,
      entries,
      expiresAt: 0,
      carry: DEFAULT_CARRY,
    });
  }

  /** `setLimit`'s arguments as a change. */
  change(override: unknown, options: unknown): LimitChange {
    this.assertEnabled('setLimit');
    return readLimitChange(this.policies, override, options);
  }

  /** `clearLimit`'s options as a change. */
  clear(options: unknown): LimitChange {
    this.assertEnabled('clearLimit');
    return readLimitClear(this.policies, options);
  }

  apply(keys: readonly string[], change: LimitChange): Promise<void> {
    return this.applyChange!(keys, change);
  }

  private assertEnabled(call: string): void {
    if (this.enabled && this.applyChange !== undefined && this.seam.changeGlobal) return;
    throw new RateLimitConfigError(
      'FLOODGATE_INVALID_OPTION',
      'RateLimiter.liveLimits',
      this.enabled,
      this.enabled
        ? `${call} needs a store that holds live limits (memoryStore or redisStore)`
        : `${call} needs a limiter made with liveLimits: true (its decisions then read the key's overrides)`,
    );
  }
}
