/** The shared test kit: drivers per adapter, the framework and store tables, the scenario tables, option-error helper. */

export { configErrorOf } from './config-error';
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
export {
  criticalityOf,
  describeLoadShedder,
  held,
  listen,
  type Running,
  type ServeShedder,
} from './load-shedder';
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
export { observeRejections, warningsDuring } from './warnings';
