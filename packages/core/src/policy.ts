/**
 * Policies: plain, serialisable descriptions of one limit. Every factory (fixedWindow, gcra, …)
 * validates its options once and returns a Policy whose `params` are the integers both the
 * Lua script (as ARGV) and the TypeScript twin read, in the same order.
 */
import { createHash } from 'node:crypto';
import { type Duration, formatDuration, parseDuration } from './duration.js';
import { configError, optionalName, readOptions } from './options.js';

/**
 * A lockout: once the policy denies a consume whose cost it could admit, the key is blocked
 * for this long. A duration blocks that long every time; the object form is progressive: the
 * k-th block in a row lasts `initial` × `multiplier`^(k−1), capped at `max`, and the count
 * starts over once `forgetAfter` has passed since the last block ended (ExpressBrute).
 */
export type BlockDuration =
  | Duration
  | {
      /** The first block's length. */
      initial: Duration;
      /** Each further block in a row lasts this many times the previous one. @default 2 */
      multiplier?: number;
      /** The longest block. @default '1d' */
      max?: Duration;
      /** A block ending this long before the next one is forgotten. @default '1d' */
      forgetAfter?: Duration;
    };

/** A policy's lockout in integer µs (a plain duration: multiplier 1, max = initial). */
export interface Lockout {
  readonly initial: number;
  readonly multiplier: number;
  readonly max: number;
  readonly forgetAfter: number;
}

/** @default 2 */
export const DEFAULT_BLOCK_MULTIPLIER = 2;
/** @default 1 day (µs) */
export const DEFAULT_BLOCK_MAX_US = 86_400_000_000;
/** @default 1 day (µs) */
export const DEFAULT_BLOCK_FORGET_AFTER_US = 86_400_000_000;
/** The largest multiplier accepted (its decimal form must stay plain digits). */
const MAX_BLOCK_MULTIPLIER = 1000;

/** Reads a policy's `blockDuration` option (`field` names it in errors). */
export function readBlockDuration(value: unknown, field: string): Lockout | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) {
    const d = parseDuration(value, field);
    return Object.freeze({ initial: d, multiplier: 1, max: d, forgetAfter: 0 });
  }
  const o = readOptions(value, field, ['initial', 'multiplier', 'max', 'forgetAfter']);
  const initial = parseDuration(o.initial, `${field}.initial`);
  const multiplier = o.multiplier === undefined ? DEFAULT_BLOCK_MULTIPLIER : o.multiplier;
  if (
    typeof multiplier !== 'number' ||
    !Number.isFinite(multiplier) ||
    multiplier < 1 ||
    multiplier > MAX_BLOCK_MULTIPLIER ||
    Math.round(multiplier * 100) !== multiplier * 100
  ) {
    throw configError(
      `${field}.multiplier`,
      multiplier,
      `a number from 1 to ${MAX_BLOCK_MULTIPLIER} with at most two decimals`,
    );
  }
  const max =
    o.max === undefined
      ? Math.max(DEFAULT_BLOCK_MAX_US, initial)
      : parseDuration(o.max, `${field}.max`);
  if (max < initial) throw configError(`${field}.max`, o.max, `a duration of at least initial`);
  const forgetAfter =
    o.forgetAfter === undefined
      ? DEFAULT_BLOCK_FORGET_AFTER_US
      : parseDuration(o.forgetAfter, `${field}.forgetAfter`, true);
  return Object.freeze({ initial, multiplier, max, forgetAfter });
}

/** The block state's key suffix: one per set of policies, so limiters never share lockouts. */
export function blockId(policies: readonly Policy[]): string {
  return `bk${policiesDigest(policies)}`;
}

/**
 * The key suffix of a caller's one state key, where the store keeps every policy's state in one
 * key (redisStore, keys.ts `sharesOneKey`): one per set of policies, like the block state's.
 */
export function stateId(policies: readonly Policy[]): string {
  return `st${policiesDigest(policies)}`;
}

/** The key suffix of a caller's live limits (overrides): one per set of policies, as blocks. */
export function limitsId(policies: readonly Policy[]): string {
  return `lm${policiesDigest(policies)}`;
}

function policiesDigest(policies: readonly Policy[]): string {
  const digest = createHash('sha1')
    .update(policies.map((p) => p.id).join(','))
    .digest('base64url');
  return digest.slice(0, 8);
}

/** A lockout as lua/include/engine.lua reads it from ARGV: '' for none. */
export function lockoutArg(l: Lockout | undefined): string {
  return l === undefined ? '' : `${l.initial}:${String(l.multiplier)}:${l.max}:${l.forgetAfter}`;
}

/** The length of the block after `level` blocks in a row (the same steps as lua/include/engine.lua). */
export function lockoutLength(lockout: Lockout, level: number): number {
  let d = lockout.initial;
  for (let i = 0; i < level && d < lockout.max; i++) {
    d = Math.min(Math.floor(d * lockout.multiplier), lockout.max);
  }
  return d;
}

/** One limit, e.g. `fixedWindow({ limit: 100, window: '1m' })`. */
export interface Policy {
  /** The algorithm: `fixed-window`, `sliding-log`, `token-bucket`, `gcra`, … */
  readonly kind: string;
  /** Used in headers and decisions; derived from kind and parameters unless given. */
  readonly name: string;
  /**
   * Stable id derived from kind, parameters and the explicit `name` if one was given, used in
   * storage keys: changing a parameter changes the id, so an old key is never read with a new
   * meaning, and differently named policies never share state.
   */
  readonly id: string;
  /** The `limit` option: units per window (the sustained rate is limit / window). */
  readonly limit: number;
  /** The window in milliseconds. */
  readonly window: number;
  /** How many cost-1 requests a fully idle key admits back to back (decision `limit`). */
  readonly capacity: number;
  /** The options as normalised (durations in milliseconds), for display and serialisation. */
  readonly options: Readonly<Record<string, unknown>>;
  /** Integer arguments of the algorithm, in the order lua/<kind>.lua reads them from ARGV. */
  readonly params: readonly number[];
  /** The `blockDuration` option in µs, when given: a denial blocks the key this long. */
  readonly lockout?: Lockout;
}

export interface PolicyDefinition {
  kind: string;
  /** Short tag that starts the id, so keys stay readable in redis-cli. */
  tag: string;
  name: unknown;
  nameField: string;
  /** The derived name, e.g. `fixed-100-per-60s`. */
  defaultName: string;
  limit: number;
  windowUs: number;
  capacity: number;
  options: Record<string, unknown>;
  params: number[];
  /** The `blockDuration` option as given (read here, named `<factory>.blockDuration`). */
  blockDuration?: unknown;
}

export function definePolicy(def: PolicyDefinition): Policy {
  const name = optionalName(def.name, def.nameField) ?? def.defaultName;
  const lockout = readBlockDuration(
    def.blockDuration,
    def.nameField.replace(/\.name$/, '.blockDuration'),
  );
  // An explicit name is part of the identity: two routes' policies named differently never
  // share state, even with equal parameters (share a budget on purpose with one limiter).
  const named = def.name === undefined ? '' : `|name=${name}`;
  const digest = createHash('sha1')
    .update(`${def.kind}|${def.params.join(',')}${named}`)
    .digest('base64url');
  return Object.freeze({
    kind: def.kind,
    name,
    id: `${def.tag}${digest.slice(0, 8)}`,
    limit: def.limit,
    window: def.windowUs / 1000,
    capacity: def.capacity,
    options: Object.freeze({
      ...def.options,
      ...(def.name === undefined ? {} : { name }),
      ...(def.blockDuration === undefined ? {} : { blockDuration: def.blockDuration }),
    }),
    params: Object.freeze(def.params),
    ...(lockout === undefined ? {} : { lockout }),
  });
}

/** `100-per-60s` — the common part of derived names. */
export function rateName(limit: number, windowUs: number): string {
  return `${limit}-per-${formatDuration(windowUs)}`;
}
