// A small API with three limits, each keyed differently:
//   /devices/*   per appKey (X-App-Key header or ?appKey=): a burst of 10, refilled at 5/s,
//                and at most 1000 an hour; only issued app keys count, others get a 403
//   POST /login  per client IP: nginx-style leaky bucket, 5 a minute with a burst of 2
//   /reports     per authenticated client id (stand-in auth: "Authorization: Bearer <id>"):
//                20 a minute and at most 2 in flight
import { fixedWindow, leakyBucket, tokenBucket } from '@floodgate/core';
import { rateLimit } from '@floodgate/koa';
import Router from '@koa/router';
import Koa from 'koa';

/** App keys this API has issued (a real app looks them up in its database). */
export const ISSUED_APP_KEYS = new Set(['my-app', 'app-a', 'app-b']);

/**
 * @param {{ store: import('@floodgate/core').Store, appKeys?: ReadonlySet<string> }} options
 */
export function createApp({ store, appKeys = ISSUED_APP_KEYS }) {
  const app = new Koa();
  // Behind N reverse proxies of your own, trust exactly N hops so ctx.ip is the client:
  // app.proxy = true; app.maxIpsCount = 1. Without maxIpsCount Koa takes the leftmost
  // X-Forwarded-For entry, which any client can forge.

  // Stand-in authentication: a real app would verify a token and load the principal.
  app.use(async (ctx, next) => {
    const token = ctx.get('authorization').match(/^Bearer (\S+)$/)?.[1];
    if (token) ctx.state.user = { id: token };
    await next();
  });

  const router = new Router();

  const devices = rateLimit({
    store,
    prefix: 'devices',
    key: 'appKey',
    // A client picks its X-App-Key freely: only keys you issued get a budget of their own.
    verifyAppKey: (appKey) => appKeys.has(appKey),
    unknownAppKey: 'refuse',
    policies: [
      tokenBucket({ name: 'device-burst', limit: 5, window: '1s', burst: 10 }),
      fixedWindow({ name: 'device-hourly', limit: 1000, window: '1h' }),
    ],
  });
  router.get('/devices', devices, (ctx) => {
    ctx.body = {
      devices: [{ id: 'thermostat-1' }, { id: 'door-2' }],
      remaining: ctx.state.rateLimit?.remaining,
    };
  });
  router.post('/devices/:id/ping', devices, (ctx) => {
    ctx.body = { id: ctx.params.id, pong: true };
  });

  const login = rateLimit({
    store,
    prefix: 'login',
    key: 'ip',
    policies: leakyBucket({ name: 'login', limit: 5, window: '1m', burst: 2 }),
  });
  router.post('/login', login, async (ctx) => {
    const body = await readJson(ctx);
    const ok = body?.user === 'demo' && body?.password === 'demo';
    ctx.status = ok ? 200 : 401;
    ctx.body = ok ? { token: 'demo' } : { error: 'invalid credentials' };
  });

  const requireAuth = async (ctx, next) => {
    if (ctx.state.user) return next();
    ctx.status = 401;
    ctx.body = { error: 'send Authorization: Bearer <client id>' };
  };
  const reports = rateLimit({
    store,
    prefix: 'reports',
    key: 'clientId',
    policies: fixedWindow({ name: 'reports', limit: 20, window: '1m' }),
    // Reports are expensive: at most 2 in flight per client (freed when the response ends).
    concurrency: { limit: 2, leaseTtl: '30s' },
  });
  router.get('/reports', requireAuth, reports, (ctx) => {
    ctx.body = { client: ctx.state.user.id, reports: [] };
  });

  router.get('/health', (ctx) => {
    ctx.body = { ok: true };
  });

  app.use(router.routes()).use(router.allowedMethods());
  return app;
}

/** A tiny JSON body reader, to keep the example free of body-parser middleware. */
async function readJson(ctx) {
  let text = '';
  for await (const chunk of ctx.req) text += chunk;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
