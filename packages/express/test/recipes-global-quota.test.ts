/**
 * docs/recipes.md, "A global API quota shared by many app servers": the recipe is the exact text
 * of test/recipes/global-quota.ts, and two app servers on one store never admit more than the
 * quota in a minute together, answering from leased blocks (one store call per block).
 */
import type { Store } from '@floodgate/core';
import request from 'supertest';
import { flushRedis, useTestRedisConnection } from '../../../test/harness/redis';
import { storesOn } from '../../../test/harness/stores';
import { createGlobalQuotaApp } from './recipes/global-quota';
import { itShowsRecipesExactly, useRecipeServer } from './recipes-table';

itShowsRecipesExactly(['global-quota.ts']);

const redis = useTestRedisConnection();
const T0 = Date.UTC(2026, 0, 1);
let now = T0;
const stores = storesOn(() => now, redis);

describe.each(stores)('a global API quota on the %s store', (storeName, makeStore) => {
  let store: Store;
  beforeEach(async () => {
    now = T0;
    if (storeName === 'redis') await flushRedis(redis());
    store = makeStore();
  });
  const serve = useRecipeServer();
  const serveToo = useRecipeServer();

  it('two app servers together admit at most the quota in a minute, then the next minute', async () => {
    const a = createGlobalQuotaApp(store, 100);
    const b = createGlobalQuotaApp(store, 100);
    const servers = [serve(a.app), serveToo(b.app)];
    const statuses: number[] = [];
    for (let i = 0; i < 240; i++) {
      statuses.push((await request(servers[i % 2]!).get('/partner/quote')).status);
    }
    // The clock stands still, so no block ends: both servers spend theirs to the last unit.
    expect(statuses.filter((s) => s === 200).length).toBe(100);
    expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true);
    const limited = await request(servers[0]!).get('/partner/quote');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    now += 60_000;
    expect((await request(servers[1]!).get('/partner/quote')).status).toBe(200);
    await a.close();
    await b.close();
  });
});
