/**
 * Test driver: an Express app with a stand-in auth middleware, the limiters under test, a route
 * that echoes the decision, a route that holds its response until released, and an error
 * handler that reports the error as JSON. Listens on 127.0.0.1 on a free port.
 */
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@floodgate/express';
import express from 'express';
import express4 from 'express4';
import type { MountedLimiter, Serve, TestApp, TestAppOptions } from './driver';

/** Serves the app on Express 5 (the devDependency `express`). */
export const serveExpress: Serve = (options) => serveWith(express, options);
/** Serves the same app on Express 4 (the devDependency alias `express4`). */
export const serveExpress4: Serve = (options) =>
  serveWith(express4 as unknown as typeof express, options);

async function serveWith(factory: typeof express, options: TestAppOptions): Promise<TestApp> {
  const app = factory();
  // A number is a hop count (the safe setting); `true` trusts every hop.
  if (options.trustProxy !== undefined) app.set('trust proxy', options.trustProxy);
  app.use((req, _res, next) => {
    const token = req.get('authorization')?.replace(/^Bearer /, '');
    if (token) (req as { user?: unknown }).user = { id: token };
    next();
  });
  const handles: MountedLimiter[] = [];
  for (const limiter of options.limiters) {
    if (options.perRequest)
      app.use((req, res, next) => rateLimit(limiter as never)(req, res, next));
    else {
      const middleware = rateLimit(limiter as never);
      handles.push(middleware as MountedLimiter);
      app.use(middleware);
    }
  }
  options.onMounted?.(handles);
  app.get('/hold', (req, res) => {
    options.onHold?.(() => res.json({ rateLimit: req.rateLimit ?? null }), req);
  });
  app.get(/.*/, (req, res) => {
    options.onHandler?.(req);
    // `?status=401`: the status to answer with (for `count`).
    res.status(Number(req.query.status) || 200).json({ rateLimit: req.rateLimit ?? null });
  });
  app.use(
    (
      error: Error & { argument?: string; code?: string },
      _req: express.Request,
      res: express.Response,
      _next: express.NextFunction,
    ) => {
      res.status(500).json({
        error: {
          name: error.name,
          code: error.code,
          argument: error.argument,
          message: error.message,
        },
      });
    },
  );
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
