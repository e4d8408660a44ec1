/**
 * FLOODGATE_UNTRUSTED_PROXY is given once per process, as documented, however many
 * middlewares and frameworks see X-Forwarded-For without a trusted proxy. Its own file: jest
 * gives each test file its own module registry, so "once per process" starts fresh here.
 */
import { fixedWindow } from '@floodgate/core';
import { serveExpress, serveExpress4, serveKoa, serveKoa2 } from '@floodgate/http-test-kit';
import request from 'supertest';

it('two middlewares on each of Express 4/5 and Koa 2/3: one warning in all', async () => {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    for (const serve of [serveExpress, serveExpress4, serveKoa, serveKoa2]) {
      const policies = fixedWindow({ limit: 100, window: '1m' });
      const app = await serve({ limiters: [{ policies }, { prefix: 'second', policies }] });
      try {
        for (let i = 0; i < 2; i++) {
          const res = await request(app.url).get('/').set('X-Forwarded-For', '198.51.100.1');
          expect(res.status).toBe(200);
        }
      } finally {
        await app.close();
      }
    }
    const codes = spy.mock.calls.map((call) => (call[1] as { code?: string } | undefined)?.code);
    expect(codes).toEqual(['FLOODGATE_UNTRUSTED_PROXY']);
  } finally {
    spy.mockRestore();
  }
});
