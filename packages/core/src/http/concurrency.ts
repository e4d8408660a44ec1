/**
 * The adapters' `concurrency` option: at most `limit` requests in flight per key, on a
 * ConcurrencyLimiter (nginx `limit_conn`). The lease taken for a request is released when its
 * response finishes, closes (client abort) or errors, whichever comes first.
 */
import {
  ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  type Lease,
} from '../concurrency-limiter.js';
import type { Duration } from '../duration.js';
import { configError, optionNames, readAs, readOptions } from '../options.js';
import type { Store } from '../stores/store.js';

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
  /** @default 'rl' */
  prefix?: string;
}

/** @default '1m' */
export const DEFAULT_LEASE_TTL: Duration = '1m';

/** Every option name of HttpConcurrencyOptions, checked against the type. */
const CONCURRENCY_OPTION_NAMES = optionNames<HttpConcurrencyOptions>({
  limit: true,
  leaseTtl: true,
  store: true,
  prefix: true,
});

/** Reads a `concurrency` option into a ConcurrencyLimiter (undefined when not given). */
export function parseConcurrencyOption(
  value: unknown,
  field: string,
  defaultStore: () => Store,
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
  const o = readOptions(value, field, CONCURRENCY_OPTION_NAMES);
  const options: ConcurrencyLimiterOptions = {
    store: (o.store as Store | undefined) ?? defaultStore(),
    limit: o.limit as number,
    leaseTtl: (o.leaseTtl as Duration | undefined) ?? DEFAULT_LEASE_TTL,
    ...(o.prefix === undefined ? {} : { prefix: o.prefix as string }),
  };
  return readAs(options, field, () => new ConcurrencyLimiter(options));
}

/** Something that emits the end of a response: Node's `http.ServerResponse`. */
export interface ResponseEvents {
  once(event: 'finish' | 'close' | 'error', listener: () => void): unknown;
}

/**
 * Releases `lease` once `response` finishes, closes or errors. A release that fails (store
 * down) is dropped: the lease then expires after its `leaseTtl`.
 */
export function releaseWhenDone(response: ResponseEvents, lease: Lease): void {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    lease.release().catch(() => undefined);
  };
  response.once('finish', release);
  response.once('close', release);
  response.once('error', release);
}
