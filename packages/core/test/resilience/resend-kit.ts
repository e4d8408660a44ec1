/**
 * The send-once kit: a decision is never charged twice, and never charged after the failure
 * policy answered it, whatever the client does on a dropped connection (re-send, replay its
 * offline queue). Each test file runs it on its own redis-server, which the second test kills.
 */
import { Redis } from 'ioredis';
import type { RedisServerHandle } from '../../../../test/harness/redis-server.js';
import { type Decision, fixedWindow, RateLimiter, redisStore } from '../../src/index.js';
import type { RedisClient } from '../../src/stores/redis-client.js';
import type { ScriptMode } from '../../src/stores/redis-options.js';

/** A connected client of the kind under test, and how to close it. */
export interface ResendClient {
  readonly client: RedisClient;
  close(): Promise<void>;
}

const LIMIT = 1_000_000_000;
// A frozen clock: every decision lands in one window, so `remaining` counts every charge.
const FROZEN = 1_700_000_000_000;
let prefixes = 0;
const limiterOn = (
  client: RedisClient,
  batch: boolean,
  scripts: ScriptMode,
  onStoreError: 'open' | 'closed' = 'open',
) =>
  new RateLimiter({
    store: redisStore({ client, clock: () => FROZEN, batch, scripts }),
    policies: fixedWindow({ limit: LIMIT, window: '1h' }),
    prefix: `resend${process.pid}x${prefixes++}`,
    onStoreError,
    timeout: 200,
    circuitBreaker: false,
  });

/** Units Redis holds for `key`, read through a separate, quiet connection. */
async function charged(server: RedisServerHandle, prefix: string, key: string): Promise<number> {
  const admin = new Redis(server.url);
  try {
    const reader = new RateLimiter({
      store: redisStore({ client: admin, clock: () => FROZEN }),
      policies: fixedWindow({ limit: LIMIT, window: '1h' }),
      prefix,
      // A read of what was charged, not of latency: a busy machine must not fail it.
      timeout: 10_000,
    });
    const d = await reader.peek(key, { cost: 0 }); // a read: remaining = limit − used
    expect(d.reason).toBeUndefined();
    return LIMIT - d.remaining;
  } finally {
    admin.disconnect();
  }
}

/**
 * 3,000 consumes (more, for up to 5 s, while none was dropped: a batching client can send them
 * all between two kills), 64 in flight, while CLIENT KILL every 7 ms drops the limiter's
 * connection with commands in flight. Checks that every admitted decision was charged once and nothing ran twice;
 * answers how many decisions the failure policy answered (their connection dropped).
 */
async function churnRound(server: RedisServerHandle, limiter: RateLimiter): Promise<number> {
  const admin = new Redis(server.url);
  let killing = true;
  const killer = (async () => {
    while (killing) {
      await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes').catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 7));
    }
  })();
  const TOTAL = 3_000;
  const IN_FLIGHT = 64;
  const until = performance.now() + 5_000;
  let next = 0;
  let byStore = 0;
  let byPolicy = 0;
  const worker = async () => {
    while (next < TOTAL || (byPolicy === 0 && performance.now() < until)) {
      next++;
      const d: Decision = await limiter.consume('victim');
      if (d.reason === undefined) {
        expect(d.allowed).toBe(true);
        byStore++;
      } else {
        byPolicy++;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  } finally {
    killing = false;
    await killer;
    admin.disconnect();
  }
  // Let any command still queued in the client reach Redis before counting.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const units = await charged(server, limiter.prefix, 'victim');
  expect(byStore + byPolicy).toBe(next);
  // Every admitted decision was charged once; a decision the failure policy answered may or
  // may not have run (its reply was lost), but nothing ran twice.
  expect(units).toBeGreaterThanOrEqual(byStore);
  expect(units).toBeLessThanOrEqual(next);
  expect(units).toBeLessThanOrEqual(byStore + byPolicy);
  return byPolicy;
}

/**
 * Defines the two send-once tests for `connect` (a client on `server()`, as a user sets it up),
 * batched or one EVALSHA per decision (or, with `scripts: 'functions'`, FCALL): CLIENT KILL
 * churn mid-flight, and a Redis killed and restarted while the failure policy answers.
 */
export function resendSafetyTests(
  server: () => RedisServerHandle,
  connect: () => Promise<ResendClient>,
  batch: boolean,
  scripts: ScriptMode = 'evalsha',
): void {
  test('connections killed mid-flight never charge a decision twice', async () => {
    const { client, close } = await connect();
    try {
      // A round whose churn happened to drop no connection mid-flight (a client that reconnects
      // between kills) proves nothing: up to three rounds, each checked in full.
      let dropped = 0;
      for (let round = 0; round < 3 && dropped === 0; round++) {
        dropped = await churnRound(server(), limiterOn(client, batch, scripts));
      }
      expect(dropped).toBeGreaterThan(0); // the churn did drop connections mid-flight
    } finally {
      await close();
    }
  });

  test('decisions answered by the failure policy while Redis is down are not charged when it returns', async () => {
    const { client, close } = await connect();
    const limiter = limiterOn(client, batch, scripts, 'closed');
    expect((await limiter.consume('k')).allowed).toBe(true);
    await server().kill();
    const answered = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
    for (const d of answered) {
      expect(d.allowed).toBe(false);
      expect(d.reason).toBeDefined();
    }
    await server().restart();
    // Wait until the client is back and has drained whatever it queued.
    for (let i = 0; i < 100; i++) {
      const d = await limiter.peek('k');
      if (d.reason === undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The restart emptied Redis: the one admitted decision is gone, and none of the 20 denied
    // ones may have been charged by a replayed queue.
    expect(await charged(server(), limiter.prefix, 'k')).toBe(0);
    await close();
  });
}
