/**
 * The adapters' `concurrency` option: at most `limit` requests in flight per key, on a
 * ConcurrencyLimiter (nginx `limit_conn`). The lease taken for a request is released when its
 * response ends (before the last byte is flushed), closes (client abort) or errors, whichever
 * comes first.
 */
import type { ServerResponse } from 'node:http';
import {
  ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  type Lease,
} from '../concurrency-limiter.js';
import type { Duration } from '../duration.js';
import { configError, optionNames, readAs, readOptions } from '../options.js';
import { DEFAULT_PREFIX } from '../rate-limiter-options.js';
import type { Store } from '../stores/store.js';
import { beforeEnd } from './before-end.js';
import { ownOptions } from './own-options.js';

/** `concurrency` as an options object; or pass a ready ConcurrencyLimiter. */
export interface HttpConcurrencyOptions {
  /** Requests in flight at once per key. */
  limit: number;
  /**
   * How long a request holds its slot at most (a crashed process never leaks one). Set it
   * above your slowest response: a request still running after it no longer counts.
   * @default '1m'
   */
  leaseTtl?: Duration;
  /** @default the rate limiter's store, else `memoryStore()` */
  store?: Store;
  /**
   * The first part of the slots' storage keys: `<prefix>:{<key>}:leases`. Each middleware's
   * slots are its own by default (two routes never take each other's slots); to share one
   * pool on purpose, pass one ConcurrencyLimiter to both middlewares.
   * @default `<the middleware's prefix>:concurrency-<limit>`
   */
  prefix?: string;
  /** @default the middleware's `onStoreError` when it is 'open', 'closed' or a store, else 'open' */
  onStoreError?: ConcurrencyLimiterOptions['onStoreError'];
  /** @default the middleware's `timeout`, else '1s' */
  timeout?: Duration;
  /** @default the middleware's `circuitBreaker` */
  circuitBreaker?: ConcurrencyLimiterOptions['circuitBreaker'];
}

/** What a `concurrency` option takes from the middleware's own options when it sets none. */
export type InheritedFailureOptions = Pick<
  ConcurrencyLimiterOptions,
  'onStoreError' | 'timeout' | 'circuitBreaker'
>;

/** @default '1m' */
export const DEFAULT_LEASE_TTL: Duration = '1m';

/** Every option name of HttpConcurrencyOptions, checked against the type. */
const CONCURRENCY_OPTION_NAMES = optionNames<HttpConcurrencyOptions>({
  limit: true,
  leaseTtl: true,
  store: true,
  prefix: true,
  onStoreError: true,
  timeout: true,
  circuitBreaker: true,
});

/**
 * Reads a `concurrency` option into a ConcurrencyLimiter (undefined when not given). Without a
 * `prefix` of its own, its slots are keyed by `middlewarePrefix` and its limit, so they are this
 * middleware's own.
 */
export function parseConcurrencyOption(
  value: unknown,
  field: string,
  defaultStore: () => Store,
  inherited: Record<string, unknown> = {},
  middlewarePrefix = DEFAULT_PREFIX,
): ConcurrencyLimiter | undefined {
  if (value === undefined) return undefined;
  if (value instanceof ConcurrencyLimiter) return value;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError(
      field,
      value,
      'a ConcurrencyLimiter or { limit, leaseTtl?, store?, prefix? }',
    );
  }
  const o = readOptions(ownOptions(value, field), field, CONCURRENCY_OPTION_NAMES);
  const options: ConcurrencyLimiterOptions = {
    store: (o.store as Store | undefined) ?? defaultStore(),
    limit: o.limit as number,
    leaseTtl: (o.leaseTtl as Duration | undefined) ?? DEFAULT_LEASE_TTL,
    prefix:
      o.prefix === undefined ? `${middlewarePrefix}:concurrency-${o.limit}` : (o.prefix as string),
    ...failureOptions(o, inherited),
  };
  return readAs(options, field, () => new ConcurrencyLimiter(options));
}

/**
 * The lease path's failure options: its own, else the middleware's (so `timeout: 100,
 * onStoreError: 'open'` on a middleware bounds its leases too). A fallback *limiter* cannot
 * hold leases, so a middleware's `onStoreError: someRateLimiter` is not inherited.
 */
function failureOptions(
  own: Record<string, unknown>,
  inherited: Record<string, unknown>,
): Partial<InheritedFailureOptions> {
  const out: Record<string, unknown> = {};
  for (const name of ['onStoreError', 'timeout', 'circuitBreaker'] as const) {
    const value = own[name] !== undefined ? own[name] : inherited[name];
    if (value === undefined) continue;
    if (
      name === 'onStoreError' &&
      own[name] === undefined &&
      typeof value === 'object' &&
      typeof (value as Partial<Store>).leases !== 'function'
    ) {
      continue;
    }
    out[name] = value;
  }
  return out as Partial<InheritedFailureOptions>;
}

export { RELEASE_WAIT_MAX_MS } from './before-end.js';

/** Denials because every slot was busy (the decision objects the HTTP layer answered with). */
const slotDenials = new WeakSet<object>();

/**
 * Marks `decision` as a refusal because every concurrency slot was busy. A slot frees when a
 * request in flight ends, which nobody knows in advance: such an answer names no wait (no
 * `Retry-After`), rather than the time until the oldest lease would expire (its `leaseTtl`,
 * a minute by default, for requests that take milliseconds).
 */
export function markSlotDenial<D extends object>(decision: D): D {
  slotDenials.add(decision);
  return decision;
}

/** Whether `decision` refused a request because every concurrency slot was busy. */
export function isSlotDenial(decision: object): boolean {
  return slotDenials.has(decision);
}

/**
 * Releases `lease` when `response` ends, closes or errors:
 * - a response that is already closed (the client gave up while its key or lease was being
 *   resolved: `close` fired before anyone listened) releases at once;
 * - `response.end(...)` waits for the release (at most RELEASE_WAIT_MAX_MS, together with the
 *   response's other settlements: before-end.ts) before it runs, so a client that sends its next request as soon as it has this answer never finds its own
 *   lease still held.
 * A release that fails (store down) is dropped: the lease then expires after its `leaseTtl`.
 */
export function releaseWhenDone(response: ServerResponse, lease: Lease): void {
  let released: Promise<unknown> | undefined;
  const release = (): Promise<unknown> => {
    released ??= lease.release().catch(() => undefined);
    return released;
  };
  if (response.closed || response.destroyed) {
    void release();
    return;
  }
  response.once('close', release);
  response.once('error', release);
  beforeEnd(response, release);
}
