/** `app.use(rateLimit)` — the factory mounted without being called — is reported clearly. */
import type { AddressInfo } from 'node:net';
import { helpUrl } from '@floodgate/core/http';
import { rateLimit } from '@floodgate/koa';
import Koa from 'koa';
import request from 'supertest';

it('app.use(rateLimit) answers every request with an error saying what to write', async () => {
  const app = new Koa();
  let reported: (Error & { code?: string }) | undefined;
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      reported = error as Error;
      ctx.status = 500;
      ctx.body = (error as Error).message;
    }
  });
  app.use(rateLimit as never);
  app.use((ctx) => {
    ctx.body = 'reached';
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  try {
    const res = await request(`http://127.0.0.1:${(server.address() as AddressInfo).port}`).get(
      '/',
    );
    expect(res.status).toBe(500);
    expect(res.text).toBe(
      `rateLimit() was called with a Koa context instead of options: it was mounted without being called. Write app.use(rateLimit({ policies: … })), not app.use(rateLimit) (help: ${helpUrl('FLOODGATE_INVALID_OPTION')})`,
    );
    expect(reported).toMatchObject({
      name: 'RateLimitConfigError',
      code: 'FLOODGATE_INVALID_OPTION',
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
