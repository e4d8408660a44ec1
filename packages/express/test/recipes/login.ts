import { fixedWindow, RateLimiter, type Store } from '@floodgate/core';
import { normalizeIp } from '@floodgate/core/http';
import { rateLimit } from '@floodgate/express';
import express, { type Express, type Request } from 'express';

/** Your password check (e.g. a bcrypt/argon2 comparison against your user table). */
export type VerifyPassword = (username: string, password: string) => Promise<boolean>;

export function createLoginApp(store: Store, verifyPassword: VerifyPassword): Express {
  const app = express();
  // Behind N reverse proxies of your own, trust exactly N hops so req.ip is the client:
  // app.set('trust proxy', 1). Never `true`: any client could then pick its IP.

  // Per IP: 100 failed logins a day across all usernames, then that IP is locked out for a day.
  // (It stops one address from trying a password against every username.)
  const perIp = rateLimit({
    store,
    prefix: 'login-ip',
    policies: fixedWindow({ name: 'login-ip', limit: 100, window: '1d', blockDuration: '1d' }),
    count: 'failed', // successful logins are given back
  });

  // Per IP and username: 5 failures in 15 minutes lock that pair out for 15 minutes, then 30,
  // 60, … up to a day while the failures go on (forgotten a day after the last lockout).
  const perUser = new RateLimiter({
    store,
    prefix: 'login-user',
    policies: fixedWindow({
      name: 'login-user',
      limit: 5,
      window: '15m',
      blockDuration: { initial: '15m', multiplier: 2, max: '1d', forgetAfter: '1d' },
    }),
  });
  // The client as the 'ip' key sees it (IPv6 grouped by /56: one subscriber cannot rotate through
  // its own addresses for fresh tries), plus the username.
  const userKey = (req: Request) => `${normalizeIp(req.ip) ?? 'unknown'}:${usernameOf(req)}`;

  app.post(
    '/login',
    express.json({ limit: '10kb' }),
    // Both limiters run BEFORE the password is checked: a locked-out client is refused without
    // a password comparison, even when it finally sends the right password.
    perIp,
    rateLimit({ limiter: perUser, key: userKey, count: 'failed' }),
    async (req, res, next) => {
      try {
        const ok = await verifyPassword(usernameOf(req), passwordOf(req));
        if (!ok) {
          res.status(401).json({ error: 'invalid username or password' });
          return;
        }
        // A successful login forgets this pair's earlier failures and lockouts.
        await perUser.reset(userKey(req));
        res.json({ ok: true });
      } catch (error) {
        next(error);
      }
    },
  );
  return app;
}

function usernameOf(req: Request): string {
  const username: unknown = req.body?.username;
  return typeof username === 'string' ? username.trim().toLowerCase().slice(0, 254) : '';
}

function passwordOf(req: Request): string {
  const password: unknown = req.body?.password;
  return typeof password === 'string' ? password : '';
}
