/**
 * `loadShedder(...)` of @floodgate/koa through a real server: the load-shedder table every
 * adapter runs (packages/core/test/http/load-shedder-table.ts), and its option errors.
 */
import * as koaShedder from '@floodgate/koa';
import Koa from 'koa';
import { configErrorOf } from '../../core/test/config-error';
import {
  criticalityOf,
  describeLoadShedder,
  held,
  listen,
  type Serve,
} from '../../core/test/http/load-shedder-table';

const serveKoa: Serve = (limiter) => {
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
