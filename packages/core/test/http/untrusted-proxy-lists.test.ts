/**
 * FLOODGATE_UNTRUSTED_PROXY for an address list on a middleware that is not keyed by address.
 * Behind a proxy the app does not trust, every client has the proxy's address: with the proxy in
 * an allowed network (here loopback), every client skips the limiter, and nothing but this
 * warning says so. Its own file: the warning is once per process (see untrusted-proxy-warning.test.ts).
 */
import { fixedWindow } from '@floodgate/core';
import { serveExpress } from '@floodgate/http-test-kit';
import request from 'supertest';

it('an allow list keyed by client id behind an untrusted proxy: reported once', async () => {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  const app = await serveExpress({
    limiters: [
      {
        policies: fixedWindow({ limit: 1, window: '1m' }),
        key: () => 'client',
        allow: ['127.0.0.0/8'],
      },
    ],
  });
  try {
    for (let i = 0; i < 3; i++) {
      const res = await request(app.url).get('/').set('X-Forwarded-For', '198.51.100.1');
      // The "proxy" (127.0.0.1) is on the list, so its every client is too.
      expect(res.status).toBe(200);
    }
    const codes = spy.mock.calls.map((call) => (call[1] as { code?: string } | undefined)?.code);
    expect(codes).toEqual(['FLOODGATE_UNTRUSTED_PROXY']);
  } finally {
    spy.mockRestore();
    await app.close();
  }
});
