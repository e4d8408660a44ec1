/**
 * `ban` through every adapter (Express, Koa, Fastify) on real servers: 429s until the
 * `after`-th denial, then a 403 `banned` problem with Retry-After for the ban's time left.
 */
import { fixedWindow, memoryStore } from '@floodgate/core';
import { BANNED_TYPE, PROBLEM_CONTENT_TYPE } from '@floodgate/core/http';
import { NEWEST_FRAMEWORKS, useTestApp } from '@floodgate/http-test-kit';
import request from 'supertest';

describe.each(NEWEST_FRAMEWORKS)('%s: ban', (_framework, serve) => {
  const { start } = useTestApp(serve);

  it('answers 403 banned from the after-th denial on, with the ban as Retry-After', async () => {
    const url = await start({
      limiters: [
        {
          store: memoryStore({ clock: () => 1_700_000_040_000 }),
          policies: fixedWindow({ limit: 1, window: '1m', name: 'per-minute' }),
          ban: { after: 2, window: '1m', duration: '15m' },
        },
      ],
    });
    expect((await request(url).get('/')).status).toBe(200);
    expect((await request(url).get('/')).status).toBe(429);
    for (let i = 0; i < 2; i++) {
      const banned = await request(url).get('/');
      expect(banned.status).toBe(403);
      expect(banned.headers['content-type']).toMatch(PROBLEM_CONTENT_TYPE);
      expect(banned.headers['retry-after']).toBe('900');
      expect(JSON.parse(banned.text)).toEqual({
        type: BANNED_TYPE,
        title: 'Forbidden',
        status: 403,
        detail: 'This client was refused too often and is banned; retry in 900 s.',
        'violated-policies': ['per-minute'],
      });
    }
  });
});
