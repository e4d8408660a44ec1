/**
 * A request refused because every concurrency slot is busy: when a slot frees is not known (it
 * frees when a request in flight ends), so the answer has no `Retry-After` and its problem body
 * names no wait, instead of the lease TTL (60 s for requests that take half a second).
 */
import { memoryStore } from '@floodgate/core';
import { holdRequests, NEWEST_FRAMEWORKS, useTestApp } from '@floodgate/http-test-kit';
import request from 'supertest';

describe.each(NEWEST_FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);

  it('a busy slot answers 429 without Retry-After or a made-up wait', async () => {
    const hold = holdRequests();
    const url = await start({
      onHold: hold.onHold,
      limiters: [{ store: memoryStore(), concurrency: { limit: 1, leaseTtl: '1m' } }],
    });
    const held = request(url)
      .get('/hold')
      .then((res) => res.status);
    await hold.reached;
    const busy = await request(url).get('/');
    expect(busy.status).toBe(429);
    expect(busy.headers['retry-after']).toBeUndefined();
    const body = JSON.parse(busy.text) as { detail: string; 'violated-policies': string[] };
    expect(body['violated-policies']).toEqual(['concurrency-1']);
    expect(body.detail).not.toMatch(/retry in \d+ s/);
    expect(body.detail).toMatch(/in flight/);
    hold.finish();
    expect(await held).toBe(200);
    expect((await request(url).get('/')).status).toBe(200);
  });
});
