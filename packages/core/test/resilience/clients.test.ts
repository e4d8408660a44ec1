/**
 * The conformance table through every standalone client shim (ioredis with auto-pipelining off
 * and on, node-redis v5), each starting from an empty script cache; and clients of unknown kinds
 * refused at construction.
 */
import { fixedWindow, RateLimitConfigError, RateLimiter, redisStore } from '../../src/index.js';
import { SCENARIOS } from '../conformance/algorithms/index.js';
import { describeConformance } from '../conformance/table.js';
import { type ConnectedClient, connectStandalone, STANDALONE_KINDS } from './clients.js';

describe.each(STANDALONE_KINDS)('%s', (kind) => {
  let connected: ConnectedClient;
  beforeAll(async () => {
    connected = await connectStandalone(kind);
  });
  afterAll(async () => {
    await connected?.close();
  });
  beforeEach(async () => {
    await connected.flushScripts();
  });

  describeConformance(kind, SCENARIOS, (clock) => redisStore({ client: connected.client, clock }));

  test('many concurrent decisions on one key admit exactly the limit', async () => {
    const limiter = new RateLimiter({
      store: redisStore({ client: connected.client }),
      policies: [fixedWindow({ limit: 25, window: '1m' })],
      prefix: `concurrent-${process.pid}-${kind.replace(/\W+/g, '-')}`,
      onStoreError: 'closed',
    });
    const decisions = await Promise.all(Array.from({ length: 200 }, () => limiter.consume('k')));
    expect(decisions.filter((d) => d.reason !== undefined)).toEqual([]);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
  });
});

describe('a client of an unknown kind', () => {
  test.each([
    ['a plain object', {}, 'an object'],
    ['a URL string', 'redis://127.0.0.1:6379', '"redis://127.0.0.1:6379"'],
    ['null', null, 'null'],
    ['a Map', new Map(), 'a Map'],
    ['an object with only eval', { eval: async () => 1 }, 'an object'],
  ])('%s is refused at construction, naming what was received', (_label, client, described) => {
    let caught: unknown;
    try {
      redisStore({ client: client as never });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RateLimitConfigError);
    expect(caught).toMatchObject({ code: 'FLOODGATE_UNKNOWN_CLIENT', field: 'redisStore.client' });
    expect((caught as Error).message).toContain(`got ${described}`);
  });
});
