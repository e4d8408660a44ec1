/**
 * The tables the HTTP test files run over (frameworks, stores) and their Redis connection, in one
 * place so that a new framework major or store reaches every file at once.
 */
import { memoryStore, redisStore, type Store } from '@floodgate/core';
import type { Redis } from 'ioredis';
import { connectIoredis } from '../../../test/harness/redis';
import { serveExpress, serveExpress4 } from '../../express/test/server';
import { serveFastify } from '../../fastify/test/server';
import { serveKoa, serveKoa2 } from '../../koa/test/server';
import type { Serve } from './http-driver';

/** Every declared peer major: Express 5 and 4, Koa 3 and 2; and Fastify. */
export const FRAMEWORKS: readonly [string, Serve][] = [
  ['express 5', serveExpress],
  ['express 4', serveExpress4],
  ['koa 3', serveKoa],
  ['koa 2', serveKoa2],
  ['fastify', serveFastify],
];

/** The newest major of each framework, for files that need not repeat a test per major. */
export const NEWEST_FRAMEWORKS: readonly [string, Serve][] = [
  ['express', serveExpress],
  ['koa', serveKoa],
  ['fastify', serveFastify],
];

/** `table` without Fastify, for files whose tests need Express/Koa request objects. */
export function withoutFastify(table: readonly [string, Serve][]): [string, Serve][] {
  return table.filter(([name]) => name !== 'fastify');
}

/**
 * One ioredis connection for a test file, opened before all its tests and closed after them.
 * Unlike `useTestRedis` it flushes nothing: each file flushes where its Redis tests start.
 * Call at the top level of a file; use the returned getter inside tests.
 */
export function useTestRedisConnection(): () => Redis {
  let client: Redis | undefined;
  beforeAll(() => {
    client = connectIoredis();
  });
  afterAll(async () => {
    await client?.quit();
  });
  return () => {
    if (!client)
      throw new Error('useTestRedisConnection(): the connection exists only inside tests');
    return client;
  };
}

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
