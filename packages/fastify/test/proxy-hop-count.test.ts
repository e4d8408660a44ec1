/**
 * A numeric `trustProxy` (a hop count) is honoured by Fastify before 5.12 and ignored from 5.12
 * on, where every client behind the proxy then shares the proxy's address and one budget. On
 * the Fastify under test (the jest projects run this file on the newest and the oldest of the
 * peer range): a hop count keys per client where Fastify honours it and is reported once as
 * FLOODGATE_UNTRUSTED_PROXY where it does not; the proxy's address in `trustProxy` keys per
 * client, silently, on both. Its own file: that code is reported once per process.
 */
import { fixedWindow, memoryStore } from '@floodgate/core';
import { rateLimit } from '@floodgate/fastify';
import Fastify, { type FastifyServerOptions } from 'fastify';

const versionProbe = Fastify();
afterAll(() => versionProbe.close());
const [major = 0, minor = 0] = versionProbe.version.split('.').map(Number);
/** Fastify 5.12 dropped hop counts: a number trusts no proxy at all. */
const hopCountsIgnored = major > 5 || (major === 5 && minor >= 12);

/** Two clients behind one proxy at 127.0.0.1, two requests each against a limit of 2. */
async function twoClientsBehindTheProxy(trustProxy: FastifyServerOptions['trustProxy'] | number) {
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  // Fastify 5.12's types no longer take a number; its runtime accepts one and ignores it.
  const app = Fastify({ trustProxy: trustProxy as FastifyServerOptions['trustProxy'] });
  await app.register(rateLimit, {
    store: memoryStore({ clock: () => 1_700_000_010_000 }),
    policies: fixedWindow({ limit: 2, window: '1m' }),
    // Each test builds a new app after requests: not the per-request mistake that code reports.
    validate: { FLOODGATE_LIMITER_PER_REQUEST: false },
  });
  app.get('/', async () => 'ok');
  try {
    const statuses: number[] = [];
    for (const client of ['198.51.100.1', '198.51.100.1', '198.51.100.2', '198.51.100.2']) {
      const res = await app.inject({
        url: '/',
        remoteAddress: '127.0.0.1',
        headers: { 'x-forwarded-for': client },
      });
      statuses.push(res.statusCode);
    }
    const warnings = spy.mock.calls
      .map(([message, options]) => ({
        code: (options as { code?: string } | undefined)?.code ?? '',
        message: String(message),
      }))
      .filter(({ code }) => code.startsWith('FLOODGATE_'));
    return { statuses, warnings };
  } finally {
    spy.mockRestore();
    await app.close();
  }
}

it('the proxy address in trustProxy keys per client, silently', async () => {
  const { statuses, warnings } = await twoClientsBehindTheProxy('127.0.0.1');
  expect(statuses).toEqual([200, 200, 200, 200]);
  expect(warnings).toEqual([]);
});

it(`a hop count ${hopCountsIgnored ? 'is ignored (Fastify 5.12+) and reported once' : 'keys per client, silently'}`, async () => {
  const { statuses, warnings } = await twoClientsBehindTheProxy(1);
  if (hopCountsIgnored) {
    // Both clients are the proxy to Fastify: one budget for all of them.
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(warnings.map(({ code }) => code)).toEqual(['FLOODGATE_UNTRUSTED_PROXY']);
    expect(warnings[0]!.message).toMatch(/Fastify 5.12 and later ignore a number/);
  } else {
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(warnings).toEqual([]);
  }
});
