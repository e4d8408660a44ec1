// A small API with three limits, each keyed differently:
//   /devices/*   per appKey (X-App-Key header or ?appKey=): a burst of 10, refilled at 5/s,
//                and at most 1000 an hour; only issued app keys count, others get a 403
//   POST /login  brute-force protection (docs/recipes.md): failed logins only, per IP (100 a
//                day, then a day's lockout) and per IP + username (5 in 15 minutes, then a
//                lockout of 15 minutes, 30, 60, … up to a day); a success resets the pair
//   /reports     per authenticated client id (stand-in auth: "Authorization: Bearer <id>"):
//                20 a minute and at most 2 in flight
import { fixedWindow, RateLimiter, tokenBucket } from '@floodgate/core';
import { normalizeIp } from '@floodgate/core/http';
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

  // Login: both limiters run before the password is checked, and count failures only.
  const loginPerIp = rateLimit({
    store,
    prefix: 'login-ip',
    policies: fixedWindow({ name: 'login-ip', limit: 100, window: '1d', blockDuration: '1d' }),
    count: 'failed',
  });
  const loginPerUser = new RateLimiter({
    store,
    prefix: 'login-user',
    policies: fixedWindow({
      name: 'login-user',
      limit: 5,
      window: '15m',
      blockDuration: { initial: '15m', multiplier: 2, max: '1d', forgetAfter: '1d' },
    }),
  });
  // The client as the 'ip' key sees it (IPv6 grouped by /56), plus the username.
  const loginKey = (ctx) => `${normalizeIp(ctx.ip) ?? 'unknown'}:${usernameOf(ctx.state.body)}`;
  router.post(
    '/login',
    loginPerIp,
    // The body is read after the per-IP limit and before the per-username one (its key).
    async (ctx, next) => {
      ctx.state.body = await readJson(ctx);
      await next();
    },
    rateLimit({ limiter: loginPerUser, key: loginKey, count: 'failed' }),
    async (ctx) => {
      // Stand-in credentials: a real app compares a password hash from its user table.
      const ok = usernameOf(ctx.state.body) === 'demo' && ctx.state.body?.password === 'demo';
      if (!ok) {
        ctx.status = 401;
        ctx.body = { error: 'invalid username or password' };
        return;
      }
      // A successful login forgets this IP + username's earlier failures and lockouts.
      await loginPerUser.reset(loginKey(ctx));
      ctx.body = { token: 'demo' };
    },
  );

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

/** The login's username, normalised so `Demo` and `demo ` share a budget. */
function usernameOf(body) {
  const username = body?.username;
  return typeof username === 'string' ? username.trim().toLowerCase().slice(0, 254) : '';
}

/** Longest JSON body read, in bytes; a larger one is not read (answered as no body). */
const MAX_BODY_BYTES = 10_000;

/**
 * A tiny JSON body reader, to keep the example free of body-parser middleware. The bytes are
 * decoded once, whole: a character split across two chunks must not turn into two U+FFFD (the
 * same username would then get a different per-username key depending on how it arrived).
 */
async function readJson(ctx) {
  const chunks = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}
