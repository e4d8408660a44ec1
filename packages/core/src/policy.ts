/**
 * Policies: plain, serialisable descriptions of one limit. Every factory (fixedWindow, gcra, …)
 * validates its options once and returns a Policy whose `params` are the integers both the
 * Lua script (as ARGV) and the TypeScript twin read, in the same order.
 */
import { createHash } from 'node:crypto';
import { formatDuration } from './duration.js';
import { optionalName } from './options.js';

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
}

export function definePolicy(def: PolicyDefinition): Policy {
  const name = optionalName(def.name, def.nameField) ?? def.defaultName;
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
    options: Object.freeze({ ...def.options, ...(def.name === undefined ? {} : { name }) }),
    params: Object.freeze(def.params),
  });
}

/** `100-per-60s` — the common part of derived names. */
export function rateName(limit: number, windowUs: number): string {
  return `${limit}-per-${formatDuration(windowUs)}`;
}
