/**
 * docs/recipes.md, "Short-lived processes": the recipe is the exact text of
 * test/recipes/short-lived.ts, and each invocation (a new connection per run, fail-fast client
 * settings) is counted: 10 runs an hour per tenant, the 11th is limited.
 */
import { flushRedis, testRedisUrl, useTestRedis, workerDb } from '../../../test/harness/redis';
import { runOnce } from './recipes/short-lived';
import { itShowsRecipesExactly } from './recipes-table';

itShowsRecipesExactly(['short-lived.ts']);

const redis = useTestRedis();

describe('short-lived processes', () => {
  beforeEach(() => flushRedis(redis()));
  const url = () => `${testRedisUrl()}/${workerDb()}`;

  it('every invocation is counted, each on its own new connection', async () => {
    let worked = 0;
    const work = async () => {
      worked++;
    };
    const outcomes: string[] = [];
    for (let i = 0; i < 12; i++) outcomes.push(await runOnce(url(), 'tenant-a', work));
    expect(outcomes).toEqual([...Array(10).fill('ran'), 'limited', 'limited']);
    expect(worked).toBe(10);
    // Another tenant has its own budget.
    expect(await runOnce(url(), 'tenant-b', work)).toBe('ran');
  });

  it('without Redis the job does not run (closed)', async () => {
    const outcome = await runOnce('redis://127.0.0.1:1', 'tenant-a', async () => undefined);
    expect(outcome).toBe('limited');
  });
});
