/** The shared HTTP test kit: drivers per adapter, the framework and store tables, the scenario table. */
export {
  holdRequests,
  type MountedLimiter,
  type Serve,
  type TestApp,
  type TestAppOptions,
  useTestApp,
} from './driver';
export { serveExpress, serveExpress4 } from './express';
export { buildFastify, serveFastify } from './fastify';
export { serveKoa, serveKoa2 } from './koa';
export { describeHttpScenarios } from './scenarios';
export {
  type Adapter,
  FRAMEWORKS,
  frameworksOf,
  httpStores,
  NEWEST_FRAMEWORKS,
  type StoreRow,
  storesOn,
  useTestRedisConnection,
  withoutFastify,
} from './tables';
