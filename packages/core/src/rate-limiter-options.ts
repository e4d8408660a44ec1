/**
 * The options of a RateLimiter and of its calls, and the readers that validate them once (at
 * construction, or at the start of each call for call arguments).
 */
import { type BanConfig, type BanOptions, readBanOption } from './ban.js';
import { DeniedCache, type DeniedCacheOptions } from './denied-cache.js';
import { type Duration, parseDuration } from './duration.js';
import { describeValue, RateLimitArgumentError, RateLimitConfigError } from './errors.js';
import {
  type CircuitBreakerOptions,
  type FailureConfig,
  type OnStoreError,
  type RateLimiterHooks,
  readFailureOptions,
} from './failure-options.js';
import {
  type HotKeysOptions,
  type HotKeyTracker,
  readHotKeysOption,
} from './hot-keys/hot-key-tracker.js';
import { configError, isCost, optionNames, ownValue, readOptions } from './options.js';
import type { Policy } from './policy.js';
import {
  type LeaseConfig,
  type LeaseOption,
  readLeaseOption,
} from './quota-lease/lease-options.js';
import type { Store } from './stores/store.js';

export interface RateLimiterOptions {
  /** Where state lives: `memoryStore()` or `redisStore({ client })`. */
  store: Store;
  /** One policy or several; a request is admitted only if every policy admits it. */
  policies: Policy | readonly Policy[];
  /** First part of every storage key. Must not contain `{` or `}`. @default 'rl' */
  prefix?: string;
  /**
   * What answers when the store fails, times out or its circuit is open: `'open'` admits,
   * `'closed'` denies, a Store (e.g. `memoryStore()`) decides with these policies, a RateLimiter
   * decides with its own. The decision's `reason` says which failure happened (docs/reliability.md).
   * @default 'open'
   */
  onStoreError?: OnStoreError;
  /** Longest wait for the store on each call; then the failure policy answers. @default '1s' */
  timeout?: Duration;
  /**
   * Stops asking a failing store: after `failureThreshold` consecutive failures, calls get the
   * failure policy at once for `cooldown`, then one call probes the store. `false` disables it.
   * @default { failureThreshold: 5, cooldown: '1s' }
   */
  circuitBreaker?: CircuitBreakerOptions | false;
  /** Callbacks for metrics: `onStoreError`, `onDecision`, `onCircuitChange`. */
  hooks?: RateLimiterHooks;
  /**
   * Remember denied keys in this process until their `retryAfter` and answer them without the
   * store: a flood from one key then costs one store call per retry window (docs/benchmarks.md).
   * `true` uses the defaults (10 000 keys, the process clock).
   * @default false
   */
  deniedCache?: boolean | DeniedCacheOptions;
  /**
   * How redisStore lays out a caller's state when the limiter has several policies.
   * `'per-caller'`: one key holds every policy's state (one GET and one SET per decision;
   * slidingLog and very large fixedWindow limits keep their own keys). `'per-policy'`: one key
   * per policy, `<prefix>:{<key>}:<policy id>`, so a policy is one budget for every limiter of
   * this prefix that holds it (NestJS module policies beside route policies use this). The
   * memory store keeps one entry per policy either way.
   * @default 'per-caller'
   */
  stateKeys?: StateKeys;
  /**
   * Live limits: `setLimit(key, …)` overrides a policy's parameters for one key at run time,
   * keeping its counts as `carry` says, and every process's next decision for that key uses the
   * override (read in the same store call). Each decision then reads the key's overrides too
   * (one more key per call), the Redis store keeps one key per policy and sends each decision as
   * its own call (no batching), and no denied cache is kept. docs/recipes.md
   * @default false
   */
  liveLimits?: boolean;
  /**
   * Most `acquire` calls waiting on one key in this process (rate-limiter-flexible's
   * `maxQueueSize`): the next one is refused at once with `reason: 'queue-full'`. Waiters on
   * one key are served first come, first served whatever this bound.
   * @default no bound
   */
  maxQueueSize?: number;
  /**
   * Escalation (@fastify/rate-limit's `ban`): a key denied `after` times within `window` is
   * blocked for `duration`, and its decisions say reason 'banned' (a 403 from the adapters).
   * Each denial then costs a second store call (the count), and the denied cache does not
   * spare it. docs/recipes.md
   * @default no ban
   */
  ban?: BanOptions;
  /**
   * Quota leases for hot keys: blocks of a key's units taken from the store in one call and
   * spent in this process, never over-admitting (docs/algorithms.md#quota-leases). `'auto'`
   * leases only the keys that take ≥ 5 % of this limiter's recent decisions here.
   * @default no leasing
   */
  lease?: LeaseOption;
  /**
   * The fixed-memory sketches behind `limiter.hotKeys()` (the keys taking the most decisions)
   * and `limiter.deniedKeys()` (the keys denied most): `false` turns them off, an object tunes
   * them (docs/observability.md#hot-keys-and-who-is-being-limited).
   * @default on: { capacity: 128, share: 0.05, halfLife: '200ms' }
   */
  hotKeys?: boolean | HotKeysOptions;
}

/** A caller's state on redisStore: one key for all policies, or one key per policy. */
export type StateKeys = 'per-caller' | 'per-policy';

export interface ConsumeOptions {
  /** Units this request takes; 0 reads without writing. @default 1 */
  cost?: number;
}

export interface AcquireOptions extends ConsumeOptions {
  /** Longest time to wait for admission. @default no bound */
  maxWait?: Duration;
}

/** @default 'rl' */
export const DEFAULT_PREFIX = 'rl';

/** Every option name of RateLimiterOptions, checked against the type. */
export const RATE_LIMITER_OPTION_NAMES = optionNames<RateLimiterOptions>({
  store: true,
  policies: true,
  prefix: true,
  onStoreError: true,
  timeout: true,
  circuitBreaker: true,
  hooks: true,
  deniedCache: true,
  stateKeys: true,
  liveLimits: true,
  maxQueueSize: true,
  ban: true,
  lease: true,
  hotKeys: true,
});

/** A RateLimiter's options, read once into fully defined values. */
export interface RateLimiterConfig {
  readonly store: Store;
  readonly policies: readonly Policy[];
  readonly prefix: string;
  readonly deniedCache: DeniedCache | undefined;
  readonly failure: FailureConfig;
  readonly stateKeys: StateKeys;
  readonly liveLimits: boolean;
  /** `maxQueueSize`, Infinity when not given. */
  readonly maxQueueSize: number;
  readonly ban: BanConfig | undefined;
  readonly lease: LeaseConfig | undefined;
  /** The `hotKeys` sketches; undefined when `hotKeys: false`. */
  readonly hotKeys: HotKeyTracker | undefined;
}

/**
 * Reads a RateLimiter's options. `where` starts every field path in errors: `RateLimiter`, or
 * an adapter's name for the same options (`rateLimit`, `RateLimitModule.forRoot`).
 */
export function readRateLimiterOptions(options: unknown, where: string): RateLimiterConfig {
  const o = readOptions(options, where, RATE_LIMITER_OPTION_NAMES);
  const policies = readPolicies(o.policies, where);
  return {
    store: readStore(o.store, where),
    policies,
    prefix: readPrefix(o.prefix, where),
    deniedCache: readDeniedCache(o.deniedCache, where),
    failure: readFailureOptions(o, where),
    stateKeys: readStateKeys(o.stateKeys, where),
    liveLimits: readLiveLimits(o.liveLimits, where),
    maxQueueSize: readMaxQueueSize(o.maxQueueSize, where),
    ban: readBanOption(o.ban, where),
    lease: readLeaseOption(o.lease, where, policies),
    hotKeys: readHotKeysOption(o.hotKeys, where),
  };
}

function readMaxQueueSize(value: unknown, where: string): number {
  if (value === undefined) return Number.POSITIVE_INFINITY;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw configError(`${where}.maxQueueSize`, value, 'a positive integer');
  }
  return value;
}

function readLiveLimits(value: unknown, where: string): boolean {
  if (value === undefined) return false;
  if (typeof value === 'boolean') return value;
  throw configError(`${where}.liveLimits`, value, 'true or false');
}

function readStateKeys(value: unknown, where: string): StateKeys {
  if (value === undefined) return 'per-caller';
  if (value === 'per-caller' || value === 'per-policy') return value;
  throw configError(`${where}.stateKeys`, value, "'per-caller' or 'per-policy'");
}

function readStore(value: unknown, where: string): Store {
  const store = value as Store | undefined;
  if (store === null || typeof store !== 'object' || typeof store.prepare !== 'function') {
    throw configError(`${where}.store`, value, 'a store: memoryStore() or redisStore({ client })');
  }
  return store;
}

/** Reads a `prefix` option (`where.prefix` in errors): a non-empty string without `{` or `}`. */
export function readPrefix(value: unknown, where: string): string {
  const prefix = value === undefined ? DEFAULT_PREFIX : value;
  if (typeof prefix !== 'string' || prefix === '' || /[{}]/.test(prefix)) {
    throw configError(`${where}.prefix`, prefix, 'a non-empty string without "{" or "}"');
  }
  return prefix;
}

function readDeniedCache(value: unknown, where: string): DeniedCache | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return new DeniedCache();
  if (value !== null && typeof value === 'object')
    return new DeniedCache(value as DeniedCacheOptions, `${where}.deniedCache`);
  throw configError(`${where}.deniedCache`, value, 'true, false or { maxKeys?, clock? }');
}

/** Names `consume`/`peek` and `acquire` accept. */
export const CONSUME_OPTIONS = optionNames<ConsumeOptions>({ cost: true });
export const ACQUIRE_OPTIONS = optionNames<AcquireOptions>({ cost: true, maxWait: true });

/**
 * Checks a call's options (own properties only, every name known: a misspelt `{ kost: 2 }` is
 * an error, never a cost of 1) and returns its cost. Runs on every call: it allocates nothing.
 */
export function readCost(
  options: ConsumeOptions | undefined,
  known: readonly string[] = CONSUME_OPTIONS,
): number {
  if (options === undefined) return 1;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    // `consume(key, 2)` from JavaScript: the 2 would otherwise be ignored and cost 1.
    throw new RateLimitArgumentError(
      'options',
      options,
      `the options argument must be an object such as { cost: ${
        typeof options === 'number' ? options : 2
      } }, got ${describeValue(options)}`,
    );
  }
  for (const name in options) {
    if (Object.hasOwn(options, name) && !known.includes(name)) {
      throw new RateLimitArgumentError(
        name,
        (options as Record<string, unknown>)[name],
        `${name} is not a call option (${known.length > 0 ? `known: ${known.join(', ')}` : 'this call takes none'})`,
      );
    }
  }
  const cost = ownValue(options, 'cost');
  if (cost === undefined) return 1;
  if (!isCost(cost)) {
    throw new RateLimitArgumentError(
      'cost',
      cost,
      `cost must be a non-negative integer, got ${describeValue(cost)}`,
    );
  }
  return cost;
}

/** At least one policy, each made by a factory, no two sharing a name or kind + parameters. */
function readPolicies(value: unknown, where: string): Policy[] {
  const list = Array.isArray(value) ? value : value === undefined ? [] : [value];
  if (list.length === 0) {
    throw new RateLimitConfigError(
      'FLOODGATE_NO_POLICIES',
      `${where}.policies`,
      value,
      `${where}.policies must hold at least one policy, e.g. fixedWindow({ limit: 100, window: "1m" })`,
    );
  }
  const names = new Map<string, number>();
  const ids = new Map<string, number>();
  list.forEach((p: Policy, i) => {
    const field = `${where}.policies[${i}]`;
    if (
      p === null ||
      typeof p !== 'object' ||
      typeof p.kind !== 'string' ||
      typeof p.id !== 'string' ||
      !Array.isArray(p.params)
    ) {
      throw configError(
        field,
        p,
        'a policy made by fixedWindow(), slidingLog(), tokenBucket(), gcra(), …',
      );
    }
    const sameName = names.get(p.name);
    if (sameName !== undefined) {
      throw new RateLimitConfigError(
        'FLOODGATE_DUPLICATE_POLICY',
        `${field}.name`,
        p.name,
        `${field}.name "${p.name}" is already the name of policies[${sameName}]; give each policy its own name`,
      );
    }
    const sameId = ids.get(p.id);
    if (sameId !== undefined) {
      throw new RateLimitConfigError(
        'FLOODGATE_DUPLICATE_POLICY',
        field,
        p.name,
        `${field} has the same kind and parameters as policies[${sameId}]; they would share state`,
      );
    }
    names.set(p.name, i);
    ids.set(p.id, i);
  });
  return list as Policy[];
}

/** `limiter.block`'s duration in µs, 0 for `'forever'`; a bad one throws RateLimitArgumentError. */
export function readBlockArgument(duration: unknown): number {
  if (duration === 'forever') return 0;
  try {
    return parseDuration(duration, 'duration');
  } catch (error) {
    throw new RateLimitArgumentError('duration', duration, (error as Error).message);
  }
}
