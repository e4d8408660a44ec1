/**
 * The tables the HTTP test files run over (frameworks, stores) and their Redis connection, in one
 * place so that a new framework major or store reaches every file at once.
 */

import type { Serve } from './driver';
import { serveExpress, serveExpress4 } from './express';
import { serveFastify } from './fastify';
import { serveKoa, serveKoa2 } from './koa';

export { useTestRedisConnection } from '../../../test/harness/redis';
export { httpStores, type StoreRow, storesOn } from '../../../test/harness/stores';

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

/** The adapters whose test drivers the kit holds. */
export type Adapter = 'express' | 'koa' | 'fastify';

/** The rows of `FRAMEWORKS` that run on `adapter` (each of its supported majors). */
export function frameworksOf(adapter: Adapter): [string, Serve][] {
  return FRAMEWORKS.filter(([name]) => name.split(' ')[0] === adapter);
}

/** `table` without Fastify, for files whose tests need Express/Koa request objects. */
export function withoutFastify(table: readonly [string, Serve][]): [string, Serve][] {
  return table.filter(([name]) => name !== 'fastify');
}
