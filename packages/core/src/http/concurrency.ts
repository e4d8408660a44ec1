/**
 * The adapters' `concurrency` option: at most `limit` requests in flight per key, on a
 * ConcurrencyLimiter (nginx `limit_conn`). The lease taken for a request is released when its
 * response finishes, closes (client abort) or errors, whichever comes first.
 */
import { ConcurrencyLimiter, type Lease } from '../concurrency-limiter.js';
import type { Duration } from '../duration.js';
import { configError, readOptions } from '../options.js';
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
  const o = readOptions(value, field, ['limit', 'leaseTtl', 'store', 'prefix']);
  try {
    return new ConcurrencyLimiter({
      store: (o.store as Store | undefined) ?? defaultStore(),
      limit: o.limit as number,
      leaseTtl: (o.leaseTtl as Duration | undefined) ?? DEFAULT_LEASE_TTL,
      ...(o.prefix === undefined ? {} : { prefix: o.prefix as string }),
    });
  } catch (error) {
    if (error instanceof Error && 'field' in error && typeof error.field === 'string') {
      const e = error as Error & { field: string; value: unknown };
      throw configError(
        field + e.field.slice('ConcurrencyLimiter'.length),
        e.value,
        e.message
          .replace(/^.* must be (.*), got .*$/, '$1')
          .replace(/^.* is required: expected /, ''),
      );
    }
    throw error;
  }
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
