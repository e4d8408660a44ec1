/**
 * `loadShedder(...)` of @floodgate/koa through a real server: the load-shedder table every
 * adapter runs (packages/core/test/http/load-shedder-table.ts), and its option errors.
 */

import {
  configErrorOf,
  criticalityOf,
  describeLoadShedder,
  held,
  listen,
  type ServeShedder,
} from '@floodgate/http-test-kit';
import * as koaShedder from '@floodgate/koa';
import Koa from 'koa';

const serveKoa: ServeShedder = (limiter) => {
  const app = new Koa();
  app.use(
    koaShedder.loadShedder({
      limiter,
      criticality: (ctx) => criticalityOf(ctx.headers['x-criticality']),
    }),
  );
  app.use(async (ctx) => {
    if (ctx.path === '/hold') await new Promise<void>((resolve) => held.push(resolve));
    ctx.body = ctx.path === '/hold' ? 'done' : 'ok';
  });
  return listen(app.callback());
};

describeLoadShedder('koa', serveKoa);

it('refuses a bad criticality at construction, naming the field', () => {
  expect(
    configErrorOf(() => koaShedder.loadShedder({ criticality: 'urgent' as never })).field,
  ).toBe('loadShedder.criticality');
});
