/**
 * A settle is applied at most once, as a consume is: under CLIENT KILL churn (ioredis re-sends
 * unanswered commands after a reconnect; both clients replay their offline queue), neither a
 * settle's charge nor its refund may run twice. Its own redis-server, the clients' defaults.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { type RedisServerHandle, startRedisServer } from '../../../../test/harness/redis-server.js';
import { fixedWindow, RateLimiter, redisStore } from '../../src/index.js';
import type { RedisClient } from '../../src/stores/redis-client.js';

jest.setTimeout(60_000);

let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

interface Client {
  readonly client: RedisClient;
  close(): Promise<void>;
}

async function ioredisDefaults(): Promise<Client> {
  const client = new Redis(server.url, { retryStrategy: () => 20 });
  client.on('error', () => undefined);
  await client.ping();
  return { client, close: async () => void client.disconnect() };
}

async function nodeRedisDefaults(): Promise<Client> {
  const client = createClient({ url: server.url, socket: { reconnectStrategy: () => 20 } });
  client.on('error', () => undefined);
  await client.connect();
  return { client, close: async () => void client.destroy() };
}

const clients: Array<[string, () => Promise<Client>, boolean]> = [
  ['ioredis', ioredisDefaults, true],
  ['ioredis (batch: false)', ioredisDefaults, false],
  ['node-redis', nodeRedisDefaults, true],
  ['node-redis (batch: false)', nodeRedisDefaults, false],
];

// A limit never reached and a frozen clock: one window, in which `remaining` counts every unit.
const LIMIT = 1_000_000_000;
const FROZEN = 1_700_000_000_000;
const ESTIMATE = 2;
let prefixes = 0;

function limiterOn(client: RedisClient, batch: boolean, prefix: string): RateLimiter {
  return new RateLimiter({
    store: redisStore({ client, clock: () => FROZEN, batch }),
    policies: fixedWindow({ limit: LIMIT, window: '1h' }),
    prefix,
    timeout: 200,
    circuitBreaker: false,
  });
}

/** Units Redis holds for `key`, read through a separate, quiet connection. */
async function charged(prefix: string, key: string): Promise<number> {
  const admin = new Redis(server.url);
  try {
    const d = await limiterOn(admin, false, prefix).peek(key, { cost: 0 });
    expect(d.reason).toBeUndefined();
    return LIMIT - d.remaining;
  } finally {
    admin.disconnect();
  }
}

describe.each(clients)('%s with its default settings', (_label, connect, batch) => {
  test('settles under CLIENT KILL churn are applied at most once, charges and refunds alike', async () => {
    const { client, close } = await connect();
    const prefix = `settle${process.pid}x${prefixes++}`;
    const limiter = limiterOn(client, batch, prefix);
    // Start well above 0 so that every refund has units to give back.
    expect((await limiter.consume('victim', { cost: 100_000 })).reason).toBeUndefined();
    const admin = new Redis(server.url);
    let killing = true;
    const killer = (async () => {
      while (killing) {
        await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes').catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 7));
      }
    })();
    // The units the store must hold: `exact` from calls it answered, plus, for each call the
    // failure policy answered (its reply lost), its change applied once or not at all.
    let exact = 100_000;
    let low = 0;
    let high = 0;
    let unanswered = 0;
    const account = (reason: string | undefined, units: number) => {
      if (reason === undefined) exact += units;
      else {
        unanswered++;
        if (units < 0) low += units;
        else high += units;
      }
    };
    const TOTAL = 1_200;
    let next = 0;
    const worker = async () => {
      while (next < TOTAL) {
        const n = next++;
        const r = await limiter.reserve('victim', { cost: ESTIMATE });
        account(r.reason, ESTIMATE);
        if (r.reason !== undefined) continue;
        // Half settle above the estimate (a charge of 3), half below (a refund of 2).
        const actual = n % 2 === 0 ? 5 : 0;
        const settled = await r.settle(actual);
        account(settled.reason, actual - ESTIMATE);
      }
    };
    try {
      await Promise.all(Array.from({ length: 48 }, worker));
    } finally {
      killing = false;
      await killer;
      admin.disconnect();
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const units = await charged(prefix, 'victim');
    await close();
    expect(unanswered).toBeGreaterThan(0); // the churn did drop connections mid-flight
    expect(units).toBeGreaterThanOrEqual(exact + low);
    expect(units).toBeLessThanOrEqual(exact + high);
  });
});
