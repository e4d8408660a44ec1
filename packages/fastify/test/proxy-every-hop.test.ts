/**
 * Fastify `trustProxy` that trusts every hop (`true`, or a function or range list that trusts
 * any address) makes `request.ip` the leftmost X-Forwarded-For entry, which any client writes:
 * the plugin reports FLOODGATE_PROXY_HOPS once, as the Express adapter does for `trust proxy:
 * true`, for keys and for allow/deny lists; a trust list naming the proxy stays silent.
 */
import { fixedWindow, memoryStore, type Policy } from '@floodgate/core';
import { rateLimit } from '@floodgate/fastify';
import { warningsDuring } from '@floodgate/http-test-kit';
import Fastify, { type FastifyServerOptions } from 'fastify';

const perMinute = (limit: number): Policy =>
  fixedWindow({ limit, window: '1m', name: 'per-minute' });

// Each test builds a new app after requests: not the per-request mistake that code reports.
const quietRebuilds = { FLOODGATE_LIMITER_PER_REQUEST: false };

/**
 * An app with the plugin; `forged` requests come straight from a client at 198.51.100.9 with a
 * new X-Forwarded-For each time. Answers the statuses and the warning codes.
 */
async function forgedRequests(
  trustProxy: FastifyServerOptions['trustProxy'],
  options: Record<string, unknown>,
  forged: (i: number) => string,
  count = 8,
): Promise<{ statuses: number[]; codes: string[] }> {
  const app = Fastify({ trustProxy });
  await app.register(rateLimit, { validate: quietRebuilds, ...options } as never);
  app.get('/', async () => 'ok');
  const statuses: number[] = [];
  try {
    const codes = await warningsDuring(async () => {
      for (let i = 0; i < count; i++) {
        const res = await app.inject({
          url: '/',
          remoteAddress: '198.51.100.9',
          headers: { 'x-forwarded-for': forged(i) },
        });
        statuses.push(res.statusCode);
      }
    });
    return { statuses, codes };
  } finally {
    await app.close();
  }
}

describe.each([
  ['trustProxy: true', true],
  ['a trust function that trusts any address', () => true],
  ['a range list that holds every address', '0.0.0.0/1,128.0.0.0/1'],
] as const)('%s', (_name, trustProxy) => {
  it('reports FLOODGATE_PROXY_HOPS once: a forged X-Forwarded-For is a new key each time', async () => {
    const { statuses, codes } = await forgedRequests(
      trustProxy,
      { policies: perMinute(2) },
      (i) => `203.0.113.${i + 1}`,
    );
    // What the warning is about: every forged address got its own budget.
    expect(statuses).toEqual(Array(8).fill(200));
    expect(codes).toEqual(['FLOODGATE_PROXY_HOPS']);
  });

  it.each(['allow', 'deny'] as const)(
    'reports FLOODGATE_PROXY_HOPS for an %s list on a middleware keyed by client id',
    async (list) => {
      const { codes } = await forgedRequests(
        trustProxy,
        { policies: perMinute(100), key: () => 'client', [list]: ['10.0.0.0/8'] },
        () => '10.0.0.1',
        3,
      );
      // FLOODGATE_UNTRUSTED_PROXY does not apply: the (forged) hops were all believed.
      expect(codes).toEqual(['FLOODGATE_PROXY_HOPS']);
    },
  );
});

it('trusting only the proxy address is silent and keys on the client it forwards for', async () => {
  const app = Fastify({ trustProxy: '127.0.0.1' });
  await app.register(rateLimit, {
    store: memoryStore({ clock: () => 1_700_000_010_000 }),
    validate: quietRebuilds,
    policies: perMinute(2),
  });
  app.get('/', async (request) => request.ip);
  try {
    const from = (client: string) =>
      app.inject({
        url: '/',
        remoteAddress: '127.0.0.1',
        headers: { 'x-forwarded-for': `203.0.113.77, ${client}` },
      });
    const codes = await warningsDuring(async () => {
      expect((await from('198.51.100.1')).body).toBe('198.51.100.1');
      expect((await from('198.51.100.1')).statusCode).toBe(200);
      expect((await from('198.51.100.1')).statusCode).toBe(429);
      expect((await from('198.51.100.2')).statusCode).toBe(200);
    });
    expect(codes).toEqual([]);
  } finally {
    await app.close();
  }
});
