/**
 * Test driver: an Express app with a stand-in auth middleware, the limiters under test, a route
 * that echoes the decision, a route that holds its response until released, and an error
 * handler that reports the error as JSON. Listens on 127.0.0.1 on a free port.
 */
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@floodgate/express';
import express from 'express';
import type { TestApp, TestAppOptions } from '../../core/test/http-driver';

export async function serveExpress(options: TestAppOptions): Promise<TestApp> {
  const app = express();
  if (options.trustProxy) app.set('trust proxy', true);
  app.use((req, _res, next) => {
    const token = req.get('authorization')?.replace(/^Bearer /, '');
    if (token) (req as { user?: unknown }).user = { id: token };
    next();
  });
  for (const limiter of options.limiters) app.use(rateLimit(limiter as never));
  app.get('/hold', (req, res) => {
    options.onHold?.(() => res.json({ rateLimit: req.rateLimit ?? null }), req);
  });
  app.get(/.*/, (req, res) => {
    options.onHandler?.(req);
    res.json({ rateLimit: req.rateLimit ?? null });
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
