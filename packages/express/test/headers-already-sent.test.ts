/** A limiter after a middleware that streamed early (test/harness/headers-already-sent.ts). */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@floodgate/express';
import express from 'express';
import express4 from 'express4';
import {
  describeHeadersAlreadySent,
  type EarlyApp,
  earlyLimiterOptions,
  type Seen,
} from '../../../test/harness/headers-already-sent';

async function serve(factory: typeof express, seen: Seen): Promise<EarlyApp> {
  const app = factory();
  app.use((_req, res, next) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write('early;');
    next();
  });
  app.use(rateLimit(earlyLimiterOptions()));
  app.get('/', (_req, res) => {
    seen.handled++;
    res.end('handler');
  });
  app.use(
    (error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      seen.errors.push(error);
      res.end('error');
    },
  );
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describeHeadersAlreadySent('express 5', (seen) => serve(express, seen));
describeHeadersAlreadySent('express 4', (seen) =>
  serve(express4 as unknown as typeof express, seen),
);
