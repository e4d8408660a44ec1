/** A limiter after a middleware that streamed early (test/harness/headers-already-sent.ts). */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@floodgate/koa';
import Koa from 'koa';
import Koa2 from 'koa2';
import {
  describeHeadersAlreadySent,
  type EarlyApp,
  earlyLimiterOptions,
  type Seen,
} from '../../../test/harness/headers-already-sent';

async function serve(Framework: typeof Koa, seen: Seen): Promise<EarlyApp> {
  const app = new Framework();
  app.on('error', (error) => seen.errors.push(error));
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      seen.errors.push(error);
      ctx.respond = false;
      ctx.res.end('error');
    }
  });
  app.use(async (ctx, next) => {
    ctx.res.writeHead(200, { 'Content-Type': 'text/plain' });
    ctx.res.write('early;');
    await next();
  });
  app.use(rateLimit(earlyLimiterOptions()));
  app.use(async (ctx) => {
    seen.handled++;
    ctx.respond = false;
    ctx.res.end('handler');
  });
  const server = createServer(app.callback());
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

describeHeadersAlreadySent('koa 3', (seen) => serve(Koa, seen));
describeHeadersAlreadySent('koa 2', (seen) => serve(Koa2 as unknown as typeof Koa, seen));
