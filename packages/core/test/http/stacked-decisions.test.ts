/**
 * Stacked limiters: `req.rateLimit` (`ctx.state.rateLimit`, `request.rateLimit`) is the last
 * limiter's decision, and `rateLimits` keeps every limiter's decision in the order they ran, so
 * a handler sees each budget, not only the last one (a request one limiter decided has
 * `rateLimit` alone).
 */
import { type Decision, fixedWindow, memoryStore } from '@floodgate/core';
import { NEWEST_FRAMEWORKS, useTestApp } from '@floodgate/http-test-kit';
import request from 'supertest';

type Holder = { rateLimit?: Decision; rateLimits?: Decision[] };

/** Koa keeps the decisions on ctx.state; Express and Fastify on the request. */
const holderOf = (req: unknown): Holder => ((req as { state?: Holder }).state ?? req) as Holder;

describe.each(NEWEST_FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  it('every stacked limiter’s decision is kept, in order; rateLimit is the last', async () => {
    const seen: Holder[] = [];
    const url = await start({
      limiters: [
        { store: memoryStore(), policies: fixedWindow({ name: 'burst', limit: 10, window: '1s' }) },
        {
          store: memoryStore(),
          policies: fixedWindow({ name: 'daily', limit: 500, window: '1d' }),
        },
      ],
      onHandler: (req) => seen.push(holderOf(req)),
    });
    expect((await request(url).get('/')).status).toBe(200);
    expect((await request(url).get('/')).status).toBe(200);
    const last = seen[1]!;
    expect(last.rateLimits?.map((d) => [d.policy, d.remaining])).toEqual([
      ['burst', 8],
      ['daily', 498],
    ]);
    expect(last.rateLimit?.policy).toBe('daily');
  });

  it('one limiter: rateLimit alone', async () => {
    const seen: Holder[] = [];
    const url = await start({
      limiters: [{ store: memoryStore(), policies: fixedWindow({ limit: 10, window: '1s' }) }],
      onHandler: (req) => seen.push(holderOf(req)),
    });
    expect((await request(url).get('/')).status).toBe(200);
    expect(seen[0]?.rateLimit?.remaining).toBe(9);
    expect(seen[0]?.rateLimits).toBeUndefined();
  });
});
