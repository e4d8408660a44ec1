/**
 * The stores a test table runs on: memory, and Redis on the file's connection, on the clock the
 * file gives (fixed, or one the tests move).
 */
import { memoryStore, redisStore, type Store } from '@floodgate/core';
import type { Redis } from 'ioredis';

/** A store to run a table on, built on the clock it is given. */
export type StoreRow = [name: string, make: (clock: () => number) => Store];

/** Memory, and Redis on `redis()`; each built on the clock given to it. */
export function httpStores(redis: () => Redis): StoreRow[] {
  return [
    ['memory', (clock) => memoryStore({ clock })],
    ['redis', (clock) => redisStore({ client: redis(), clock })],
  ];
}

/** Memory, and Redis on `redis()`; both on the file's `clock`. */
export function storesOn(clock: () => number, redis: () => Redis): [string, () => Store][] {
  return httpStores(redis).map(([name, make]) => [name, () => make(clock)]);
}
