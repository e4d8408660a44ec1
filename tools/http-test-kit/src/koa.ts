/**
 * Test driver: a Koa app with a stand-in auth middleware, the limiters under test, a route that
 * echoes the decision, a route that holds its response until released, and an error handler
 * that reports the error as JSON. Listens on 127.0.0.1 on a free port.
 */
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@floodgate/koa';
import Koa from 'koa';
import Koa2 from 'koa2';
import type { MountedLimiter, Serve, TestApp, TestAppOptions } from './driver';

/** Serves the app on Koa 3 (the devDependency `koa`). */
export const serveKoa: Serve = (options) => serveWith(Koa, options);
/** Serves the same app on Koa 2 (the devDependency alias `koa2`). */
export const serveKoa2: Serve = (options) => serveWith(Koa2 as unknown as typeof Koa, options);

async function serveWith(Framework: typeof Koa, options: TestAppOptions): Promise<TestApp> {
  const app = new Framework();
  // A number is a hop count (`maxIpsCount`, the safe setting); `true` trusts every hop.
  if (options.trustProxy !== undefined && options.trustProxy !== false) {
    app.proxy = true;
    if (typeof options.trustProxy === 'number') app.maxIpsCount = options.trustProxy;
  }
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const error = err as Error & { argument?: string; code?: string };
      ctx.status = 500;
      ctx.body = {
        error: {
          name: error.name,
          code: error.code,
          argument: error.argument,
          message: error.message,
        },
      };
    }
  });
  app.use(async (ctx, next) => {
    const token = ctx.get('authorization').replace(/^Bearer /, '');
    if (token) ctx.state.user = { id: token };
    await next();
  });
  const handles: MountedLimiter[] = [];
  for (const limiter of options.limiters) {
    if (options.perRequest) app.use((ctx, next) => rateLimit(limiter as never)(ctx, next));
    else {
      const middleware = rateLimit(limiter as never);
      handles.push(middleware as MountedLimiter);
      app.use(middleware);
    }
  }
  options.onMounted?.(handles);
  app.use(async (ctx) => {
    if (ctx.path === '/hold') {
      await new Promise<void>((release) => options.onHold?.(release, ctx));
    } else {
      options.onHandler?.(ctx);
    }
    // `?status=401`: the status to answer with (for `count`).
    ctx.status = Number(ctx.query.status) || 200;
    ctx.body = { rateLimit: ctx.state.rateLimit ?? null };
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
