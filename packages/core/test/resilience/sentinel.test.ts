/**
 * A real Redis Sentinel setup (a master, a replica, three sentinels; test/harness/sentinel.ts)
 * through ioredis's sentinel support and node-redis's `createSentinel`, with their default
 * settings: a failover under load is answered through the failure policy (no crash, nothing
 * past `timeout`), decisions are exact again on the promoted replica, and dropped connections
 * never charge a decision twice (node-redis's sentinel client re-sends a command whose master
 * connection dropped; the store's shim refuses the second write).
 */
import net from 'node:net';
import { Redis } from 'ioredis';
import { createSentinel } from 'redis';
import {
  type RedisSentinelHandle,
  SENTINEL_MASTER_NAME,
  startRedisSentinel,
} from '../../../../test/harness/sentinel.js';
import {
  ConcurrencyLimiter,
  type Decision,
  fixedWindow,
  RateLimiter,
  redisStore,
} from '../../src/index.js';
import type { RedisClient } from '../../src/stores/redis-client.js';

jest.setTimeout(60_000);

let sentinel: RedisSentinelHandle;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  sentinel = await startRedisSentinel();
}, 60_000);
afterAll(async () => {
  await sentinel?.stop();
  process.off('unhandledRejection', onUnhandled);
});
beforeEach(async () => {
  // Each test starts with an agreed master and a synced replica.
  await sentinel.master();
  await sentinel.waitForReplica();
});
afterEach(() => {
  expect(unhandled).toEqual([]);
});

interface Client {
  readonly client: RedisClient;
  close(): Promise<void>;
}

/** `host:port` the sentinels name → where the client connects instead. */
type AddressMap = Record<string, { host: string; port: number }>;

async function ioredisSentinel(natMap?: AddressMap): Promise<Client> {
  const client = new Redis({
    sentinels: [...sentinel.sentinelNodes],
    name: SENTINEL_MASTER_NAME,
    natMap,
  });
  client.on('error', () => undefined);
  await new Promise((resolve) => client.once('ready', resolve));
  return { client, close: async () => void client.disconnect() };
}

async function nodeRedisSentinel(nodeAddressMap?: AddressMap): Promise<Client> {
  const client = createSentinel({
    name: SENTINEL_MASTER_NAME,
    sentinelRootNodes: sentinel.sentinelNodes.map((n) => ({ ...n })),
    nodeAddressMap,
  });
  client.on('error', () => undefined);
  await client.connect();
  return { client, close: async () => void (await client.destroy()) };
}

const CLIENTS: Array<[string, (map?: AddressMap) => Promise<Client>]> = [
  ['ioredis (sentinels)', ioredisSentinel],
  ['node-redis createSentinel', nodeRedisSentinel],
];

const LIMIT = 1_000_000_000;
// A frozen clock: every decision lands in one window, so `remaining` counts every charge.
const FROZEN = 1_700_000_000_000;
const TIMEOUT = 250;
const FAILURES = ['store-error', 'timeout', 'circuit-open'];
let prefixes = 0;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function limiterOn(client: RedisClient, failures: string[] = [], timeout = TIMEOUT) {
  return new RateLimiter({
    store: redisStore({ client, clock: () => FROZEN }),
    policies: fixedWindow({ limit: LIMIT, window: '1h' }),
    prefix: `sentinel${process.pid}x${prefixes++}`,
    onStoreError: 'open',
    timeout,
    circuitBreaker: { failureThreshold: 3, cooldown: 100 },
    hooks: { onStoreError: (event) => failures.push(event.failure) },
  });
}

/** Units the current master holds for `key` (read through a fresh, quiet connection). */
async function charged(prefix: string, key: string): Promise<number> {
  const master = await sentinel.master();
  const admin = new Redis(master.url);
  try {
    const reader = new RateLimiter({
      store: redisStore({ client: admin, clock: () => FROZEN }),
      policies: fixedWindow({ limit: LIMIT, window: '1h' }),
      prefix,
    });
    const d = await reader.peek(key, { cost: 0 });
    expect(d.reason).toBeUndefined();
    return LIMIT - d.remaining;
  } finally {
    admin.disconnect();
  }
}

/**
 * A TCP proxy to `port` that forwards everything, except that after `cutNextReply()` the next
 * data coming back from Redis is dropped along with both connections.
 */
async function startCutProxy(port: number) {
  let armed = false;
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((downstream) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [downstream, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        downstream.destroy();
        upstream.destroy();
      });
    }
    // Only the connection that carries the next script call is cut: the store's one-off
    // CONFIG GET (sent off the decision's path after the first call) may travel on another
    // connection of the client's pool, and cutting its reply instead made this test flaky.
    let cutThis = false;
    downstream.on('data', (chunk: Buffer) => {
      if (armed && /EVAL/i.test(chunk.toString('latin1'))) {
        armed = false;
        cutThis = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (cutThis) {
        cutThis = false;
        cuts++;
        downstream.destroy();
        upstream.destroy();
      } else {
        downstream.write(chunk);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cutNextReply: () => {
      armed = true;
    },
    get cuts() {
      return cuts;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Runs up to `cap` calls of `decide`, 8 at a time; counts who answered and the slowest. */
async function load(decide: () => Promise<Decision>, keepGoing: () => boolean, cap: number) {
  let made = 0;
  let byStore = 0;
  const reasons: string[] = [];
  let slowest = 0;
  const worker = async () => {
    while (keepGoing() && made < cap) {
      made++;
      const started = performance.now();
      const d = await decide();
      slowest = Math.max(slowest, performance.now() - started);
      if (d.reason === undefined) byStore++;
      else reasons.push(d.reason);
      await sleep(2);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { made, byStore, reasons, slowest };
}

describe.each(CLIENTS)('%s', (_label, connect) => {
  test('a failover under load is answered by the failure policy, then exact on the new master', async () => {
    const { client, close } = await connect();
    const failures: string[] = [];
    const limiter = limiterOn(client, failures);
    const slots = new ConcurrencyLimiter({
      store: redisStore({ client }),
      limit: 1000,
      leaseTtl: '1m',
      prefix: limiter.prefix,
      timeout: TIMEOUT,
      onStoreError: 'open',
    });
    try {
      expect((await limiter.consume('during')).reason).toBeUndefined();
      let switching = true;
      const switched = sentinel.failover().finally(() => {
        switching = false;
      });
      // Bounded: stops when the sentinels agree on the new master, or after 5 000 calls.
      // Leases too: each held 10 ms, then released (a release that fails is left to expire).
      const acquire = async () => {
        const d = await slots.acquire('worker');
        if (d.lease) setTimeout(() => d.lease!.release().catch(() => undefined), 10);
        return d;
      };
      const [during, leases] = await Promise.all([
        load(
          () => limiter.consume('during'),
          () => switching,
          5_000,
        ),
        load(acquire, () => switching, 5_000),
      ]);
      const victim = await switched;
      // Answered through the failure policy while the master was gone; nothing hung.
      expect(during.reasons.length).toBeGreaterThan(0);
      for (const reason of during.reasons) expect(FAILURES).toContain(reason);
      expect(failures.length).toBeGreaterThan(0);
      for (const failure of failures) expect(['store-error', 'timeout']).toContain(failure);
      expect(during.slowest).toBeLessThan(TIMEOUT + 1_000);
      expect(leases.reasons.length).toBeGreaterThan(0);
      for (const reason of leases.reasons) expect(FAILURES).toContain(reason);
      expect(leases.slowest).toBeLessThan(TIMEOUT + 1_000);

      // The client finds the promoted replica: Redis decides again (NOSCRIPT there, then EVAL).
      let back = await limiter.peek('after');
      for (let i = 0; i < 300 && back.reason !== undefined; i++) {
        await sleep(50);
        back = await limiter.peek('after');
      }
      expect(back.reason).toBeUndefined();
      // Exact: every decision Redis admitted is counted once on the new master.
      const after = await load(
        () => limiter.consume('after'),
        () => true,
        300,
      );
      expect(after.reasons).toEqual([]);
      expect(after.byStore).toBe(300);
      expect(await charged(limiter.prefix, 'after')).toBe(300);
      // At most once during the switch (a write the old master acknowledged may be lost with it).
      expect(await charged(limiter.prefix, 'during')).toBeLessThanOrEqual(during.made + 1);
      // Leases go through the same client and guard.
      const lease = await slots.acquire('worker');
      expect(lease.reason).toBeUndefined();
      expect(await lease.lease!.release()).toBe(true);

      // The old master comes back as a replica of the new one, for the next failover.
      await sentinel.rejoin(victim);
    } finally {
      await close();
    }
  });

  test('a decision whose reply was lost is not run again on reconnect', async () => {
    // The master is reached through a proxy (ioredis natMap, node-redis nodeAddressMap) that
    // can drop a connection right after Redis ran a command, before its reply arrives: the
    // client sees a dropped connection and would run the command again after reconnecting.
    const master = await sentinel.master();
    const proxy = await startCutProxy(master.port);
    const { client, close } = await connect({
      [`127.0.0.1:${master.port}`]: { host: '127.0.0.1', port: proxy.port },
    });
    // A long timeout: a command the client re-sends is still wanted when it does.
    const limiter = limiterOn(client, [], 5_000);
    try {
      expect((await limiter.consume('k')).reason).toBeUndefined();
      proxy.cutNextReply();
      const lost = await limiter.consume('k');
      expect(lost.reason).toBe('store-error');
      expect(proxy.cuts).toBe(1);
      // Ran once (its reply was lost), not twice.
      expect(await charged(limiter.prefix, 'k')).toBe(2);
      expect((await limiter.consume('k')).reason).toBeUndefined();
      expect(await charged(limiter.prefix, 'k')).toBe(3);
    } finally {
      await close();
      await proxy.close();
    }
  });
});
