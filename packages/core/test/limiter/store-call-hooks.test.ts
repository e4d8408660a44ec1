/**
 * The hooks that metrics are built on (`@floodgate/opentelemetry`): `onStoreCall` reports every
 * store round trip with its duration and outcome, and `onDecision` says when the denied-key
 * cache answered (`context.cached`), on a real Redis and on one that never answers.
 */
import { createServer, type Server } from 'node:net';
import { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis';
import {
  type CallContext,
  fixedWindow,
  memoryStore,
  RateLimiter,
  redisStore,
  type StoreCallEvent,
} from '../../src/index';

let redis: Redis;
beforeAll(() => {
  redis = connectIoredis();
});
beforeEach(() => flushRedis(redis));
afterAll(() => redis.quit());

const policies = fixedWindow({ limit: 1, window: '1m', name: 'per-minute' });

it('onStoreCall: each Redis round trip, with its duration; the denied cache makes none', async () => {
  const calls: StoreCallEvent[] = [];
  const contexts: CallContext[] = [];
  const limiter = new RateLimiter({
    store: redisStore({ client: redis }),
    policies,
    deniedCache: true,
    hooks: {
      onStoreCall: (event) => calls.push(event),
      onDecision: (_decision, context) => contexts.push(context),
    },
  });
  expect((await limiter.consume('k')).allowed).toBe(true);
  expect((await limiter.consume('k')).allowed).toBe(false);
  expect((await limiter.consume('k')).allowed).toBe(false); // answered by the denied cache
  await limiter.peek('other');
  expect(calls.map((c) => [c.key, c.outcome, c.peek])).toEqual([
    ['k', 'ok', false],
    ['k', 'ok', false],
    ['other', 'ok', true],
  ]);
  for (const call of calls) expect(call.durationMs).toBeGreaterThan(0);
  expect(contexts.map((c) => c.cached === true)).toEqual([false, false, true, false]);
});

it('onStoreCall: a store that never answers is reported as a timeout after the timeout', async () => {
  // A TCP server that accepts and never replies: every command waits until the limiter's timeout.
  const silent: Server = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const port = (silent.address() as { port: number }).port;
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: false,
    enableReadyCheck: false,
  });
  try {
    const calls: StoreCallEvent[] = [];
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies,
      timeout: 50,
      circuitBreaker: false,
      hooks: { onStoreCall: (event) => calls.push(event) },
    });
    const decision = await limiter.consume('k');
    expect(decision.reason).toBe('timeout');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ key: 'k', outcome: 'timeout' });
    expect(calls[0]!.durationMs).toBeGreaterThanOrEqual(49);
  } finally {
    client.disconnect();
    silent.close();
  }
});

it('onStoreCall is not called for the in-process memory store', async () => {
  const calls: StoreCallEvent[] = [];
  const limiter = new RateLimiter({
    store: memoryStore(),
    policies,
    hooks: { onStoreCall: (event) => calls.push(event) },
  });
  await limiter.consume('k');
  expect(calls).toEqual([]);
});
