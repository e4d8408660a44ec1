/**
 * docs/recipes.md, "Per-plan limits" and "Shadow rollout": each recipe there is the exact text of
 * a file in test/recipes/ (checked here), and each app is exercised with supertest on the memory
 * store and on Redis.
 */
import type { CallContext, Decision, Store } from '@floodgate/core';
import request from 'supertest';
import { flushRedis, useTestRedisConnection } from '../../../test/harness/redis';
import { storesOn } from '../../../test/harness/stores';
import { type Account, createPlanApp } from './recipes/per-plan';
import { createApiApp } from './recipes/shadow-rollout';
import { itShowsRecipesExactly, useRecipeServer } from './recipes-table';

itShowsRecipesExactly(['per-plan.ts', 'shadow-rollout.ts']);

const redis = useTestRedisConnection();

// Midnight UTC: minute and day windows start now.
const T0 = Date.UTC(2026, 0, 1);
let now = T0;
const clock = () => now;
const stores = storesOn(clock, redis);

describe.each(stores)('recipes on the %s store', (storeName, makeStore) => {
  let store: Store;
  beforeEach(async () => {
    now = T0;
    if (storeName === 'redis') await flushRedis(redis());
    store = makeStore();
  });
  const serve = useRecipeServer();

  it('per-plan limits: each plan its own limits; an upgrade applies to the next request', async () => {
    const accounts = new Map<string, Account>([['key-a', { id: 'acct-a', plan: 'free' }]]);
    const s = serve(createPlanApp(store, async (apiKey) => accounts.get(apiKey)));
    const asA = () => request(s).get('/api/usage').set('Authorization', 'Bearer key-a');
    for (let i = 0; i < 60; i++) expect((await asA()).status).toBe(200);
    const limited = await asA();
    expect(limited.status).toBe(429);
    expect(limited.headers['ratelimit-policy']).toBe(
      '"free";q=60;w=60, "free-daily";q=1000;w=86400',
    );
    // Anonymous callers have their own (IP) bucket and plan.
    const anonymous = await request(s).get('/api/usage');
    expect(anonymous.body).toMatchObject({ plan: 'anonymous', rateLimit: { remaining: 9 } });

    accounts.set('key-a', { id: 'acct-a', plan: 'pro' });
    const upgraded = await asA();
    expect(upgraded.status).toBe(200);
    expect(upgraded.body).toMatchObject({
      plan: 'pro',
      rateLimit: { policy: 'pro', remaining: 39 },
    });
  });

  it('shadow rollout: counted and measured, never refused; enforcing later refuses at once', async () => {
    const seen: [boolean, boolean | undefined][] = [];
    const hooks = {
      onDecision: (d: Decision, context: CallContext) => seen.push([d.allowed, context.shadow]),
    };
    const shadow = serve(createApiApp(store, false, hooks));
    const statuses: number[] = [];
    for (let i = 0; i < 41; i++) {
      const res = await request(shadow).get('/api/items');
      statuses.push(res.status);
      expect(res.headers.ratelimit).toBeUndefined();
    }
    expect(new Set(statuses)).toEqual(new Set([200]));
    expect(seen.filter(([allowed]) => !allowed)).toEqual([[false, true]]);
    shadow.close();

    // The same store, prefix and policies, enforced: the counters carried over.
    const enforced = serve(createApiApp(store, true, {}));
    const refused = await request(enforced).get('/api/items');
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
  });
});
