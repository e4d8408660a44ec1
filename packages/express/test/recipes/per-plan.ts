import { fixedWindow, gcra, type Policy, type Store } from '@floodgate/core';
import { rateLimit } from '@floodgate/express';
import express, { type Express, type Request } from 'express';

export type Plan = 'free' | 'pro';
export interface Account {
  id: string;
  plan: Plan;
}
/** Your API-key check, e.g. a cached lookup in your accounts table. */
export type FindAccount = (apiKey: string) => Promise<Account | undefined>;

// Built once. Explicit names keep each plan's state apart and show in the RateLimit headers.
const PLAN_LIMITS: Record<Plan | 'anonymous', Policy[]> = {
  anonymous: [fixedWindow({ name: 'anonymous', limit: 10, window: '1m' })],
  free: [
    fixedWindow({ name: 'free', limit: 60, window: '1m' }),
    fixedWindow({ name: 'free-daily', limit: 1_000, window: '1d' }),
  ],
  pro: [gcra({ name: 'pro', limit: 20, window: '1s', burst: 40 })],
};

export function createPlanApp(store: Store, findAccount: FindAccount): Express {
  const app = express();
  const accounts = new WeakMap<Request, Account>();

  // Authentication runs BEFORE the limiter, so the key and the plan are the account's.
  app.use(async (req, _res, next) => {
    try {
      const apiKey = req.get('authorization')?.replace(/^Bearer /, '');
      const account = apiKey ? await findAccount(apiKey) : undefined;
      if (account) accounts.set(req, account);
      next();
    } catch (error) {
      next(error);
    }
  });

  app.use(
    rateLimit({
      store,
      prefix: 'api',
      key: ['clientId', 'ip'], // the account, else (anonymous) the IP
      clientId: (req) => accounts.get(req)?.id,
      // Looked up on every request: an upgrade applies to the very next one, starting from the
      // new plan's own counters.
      policies: (req) => PLAN_LIMITS[accounts.get(req)?.plan ?? 'anonymous'],
    }),
  );

  app.get('/api/usage', (req, res) => {
    res.json({ plan: accounts.get(req)?.plan ?? 'anonymous', rateLimit: req.rateLimit });
  });
  return app;
}
