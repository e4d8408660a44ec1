/**
 * The fleet-wide critical reserve on a real Redis: several "processes" (each its own client,
 * store and adaptive limit) share one ConcurrencyLimiter pool; non-critical requests hold its
 * leases and never fill the reserved share, critical ones take none. Leases free on release and
 * expire when their holder dies; a failing or hanging store answers through the pool's guard.
 */
import net from 'node:net';
import { configErrorOf, warningsDuring } from '@floodgate/http-test-kit';
import { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis';
import {
  type AdaptiveConcurrency,
  type AdaptiveDecision,
  adaptiveConcurrency,
  ConcurrencyLimiter,
  type ConcurrencyLimiterOptions,
  type Criticality,
  memoryStore,
  RateLimitArgumentError,
  redisStore,
} from '../../src/index';
import { fakeClock } from '../conformance/table';

const clients: Redis[] = [];
const connect = () => {
  const client = connectIoredis();
  clients.push(client);
  return client;
};
beforeEach(async () => {
  await flushRedis(connect());
});
afterEach(() => {
  for (const client of clients.splice(0)) if (client.status !== 'end') client.disconnect();
});

let prefixes = 0;
const time = fakeClock();

/**
 * One process: its own Redis connection and store, a fixed local limit of `local` (AIMD with
 * min = max), and the fleet pool of `capacity` leases (30 % reserved for critical requests).
 */
function processWith(
  capacity: number,
  prefix: string,
  local = 100,
  pool: Partial<ConcurrencyLimiterOptions> = {},
): AdaptiveConcurrency {
  const limiter = new ConcurrencyLimiter({
    store: redisStore({ client: connect(), clock: time.clock }),
    limit: capacity,
    leaseTtl: '10s',
    prefix,
    ...pool,
  });
  return adaptiveConcurrency({
    algorithm: 'aimd',
    initialLimit: local,
    minLimit: local,
    maxLimit: local,
    criticalReserve: 0.3,
    defaultReserve: 0,
    fleet: { limiter, key: 'api' },
  });
}

const take = (shed: AdaptiveConcurrency, criticality: Criticality, n: number) =>
  Promise.all(Array.from({ length: n }, () => shed.acquire({ criticality })));
const admitted = (decisions: AdaptiveDecision[]) => decisions.filter((d) => d.allowed).length;

describe('adaptiveConcurrency with a fleet-wide pool on Redis', () => {
  it('keeps the reserved share of the pool for critical requests across processes', async () => {
    const prefix = `fleet${prefixes++}`;
    const [a, b, c] = [processWith(10, prefix), processWith(10, prefix), processWith(10, prefix)];
    // 10 × (1 − 0.3) = 7 non-critical leases fleet-wide, whichever process asks
    const first = await take(a, 'default', 5);
    const second = await take(b, 'sheddable', 5);
    expect([admitted(first), admitted(second)]).toEqual([5, 2]);
    const shed = second.find((d) => !d.allowed)!;
    expect(shed).toMatchObject({ reason: 'overloaded', policy: 'concurrency-10', remaining: 0 });
    expect(shed.policies.map((p) => [p.name, p.allowed])).toEqual([
      ['adaptive-aimd', true],
      ['concurrency-10', false],
    ]);
    // The refused requests gave their local slots back; each process's own limit had room.
    expect([a.inFlight, b.inFlight]).toEqual([5, 2]);
    expect(admitted(await take(c, 'default', 3))).toBe(0);
    // Critical requests take no lease: admitted everywhere, up to the local limits.
    expect(admitted(await take(c, 'critical', 20))).toBe(20);
    const held = await connect().zcard(`${prefix}:{api}:leases`);
    expect(held).toBe(7);
  });

  it('frees the lease on release, and the admitted decision says how much of the pool is left', async () => {
    const prefix = `fleet${prefixes++}`;
    const [a, b] = [processWith(4, prefix), processWith(4, prefix)];
    // 4 × 0.7 = 2.8: two non-critical leases
    const [one, two] = await take(a, 'default', 2);
    expect([one!.remaining, two!.remaining]).toEqual([1, 0]);
    expect((await b.acquire()).allowed).toBe(false);
    expect(one!.lease!.release()).toBe(true);
    expect(one!.lease!.release()).toBe(false);
    // the pool's release is asynchronous: wait for the lease to be gone
    const redis = connect();
    for (let i = 0; i < 50 && (await redis.zcard(`${prefix}:{api}:leases`)) > 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await b.acquire()).allowed).toBe(true);
    expect(a.inFlight).toBe(1);
  });

  it('expires the leases of a process that died, after the pool leaseTtl', async () => {
    const prefix = `fleet${prefixes++}`;
    const dead = processWith(5, prefix);
    const alive = processWith(5, prefix);
    // 5 × 0.7 = 3.5: three non-critical leases, all taken by the process that then dies
    expect(admitted(await take(dead, 'default', 3))).toBe(3);
    clients[1]!.disconnect(); // its connection is gone; its leases were never released
    expect(admitted(await take(alive, 'default', 3))).toBe(0);
    time.now += 10_000; // the pool's leaseTtl
    expect(admitted(await take(alive, 'default', 4))).toBe(3);
    time.now += 10_000;
  });

  it('refuses a class whose share of the pool is full, before it asks for anything else', async () => {
    const prefix = `fleet${prefixes++}`;
    const shed = adaptiveConcurrency({
      algorithm: 'aimd',
      initialLimit: 50,
      minLimit: 50,
      maxLimit: 50,
      fleet: {
        limiter: new ConcurrencyLimiter({
          store: redisStore({ client: connect() }),
          limit: 10,
          leaseTtl: '10s',
          prefix,
        }),
        criticalReserve: 0.2,
        defaultReserve: 0.3,
      },
    });
    // the pool's own reserves: default 10 × 0.8 = 8, sheddable 10 × 0.5 = 5
    expect(admitted(await take(shed, 'sheddable', 8))).toBe(5);
    expect(admitted(await take(shed, 'default', 8))).toBe(3);
    expect(admitted(await take(shed, 'critical', 3))).toBe(3);
  });
});

describe('the fleet pool through its store guard', () => {
  /** A TCP server that accepts connections and never answers: every command hangs. */
  let silent: net.Server;
  const sockets = new Set<net.Socket>();
  beforeAll(async () => {
    silent = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('end', () => socket.destroy()); // the client disconnected: close at once
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  const hanging = () => {
    const client = new Redis({
      port: (silent.address() as net.AddressInfo).port,
      host: '127.0.0.1',
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
    });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };
  const shedOn = (pool: Partial<ConcurrencyLimiterOptions>) =>
    adaptiveConcurrency({
      algorithm: 'aimd',
      initialLimit: 4,
      minLimit: 4,
      maxLimit: 4,
      fleet: {
        limiter: new ConcurrencyLimiter({
          store: redisStore({ client: hanging() }),
          limit: 10,
          leaseTtl: '10s',
          timeout: '50ms',
          ...pool,
        }),
      },
    });

  it("answers by the pool's failure policy when its store hangs: open admits without a pool lease", async () => {
    const shed = shedOn({ onStoreError: 'open' });
    const warnings = await warningsDuring(async () => {
      const d = await shed.acquire();
      expect(d).toMatchObject({ allowed: true, reason: 'timeout' });
      expect(d.lease!.release()).toBe(true);
      expect(shed.inFlight).toBe(0);
    });
    expect(warnings).toEqual(['FLOODGATE_STORE_UNAVAILABLE']);
  });

  it('closed refuses non-critical requests (giving the local slot back); critical ones never wait on the store', async () => {
    const shed = shedOn({ onStoreError: 'closed', circuitBreaker: false });
    const warnings = await warningsDuring(async () => {
      const d = await shed.acquire({ criticality: 'default' });
      expect(d).toMatchObject({ allowed: false, reason: 'timeout', policy: 'concurrency-10' });
      expect(shed.inFlight).toBe(0);
      const critical = await shed.acquire({ criticality: 'critical' });
      expect(critical.allowed).toBe(true);
      expect(critical.reason).toBeUndefined();
    });
    expect(warnings).toEqual(['FLOODGATE_STORE_UNAVAILABLE']);
  });

  it("a fallback store holds the pool's leases while Redis hangs", async () => {
    const shed = shedOn({ onStoreError: memoryStore() });
    // 10 × 0.8 = 8 default leases in the fallback; the local limit (4) binds first
    let decisions: AdaptiveDecision[] = [];
    await warningsDuring(async () => {
      decisions = await take(shed, 'default', 4);
    });
    expect(decisions.map((d) => [d.allowed, d.reason])).toEqual([
      [true, 'fallback'],
      [true, 'fallback'],
      [true, 'fallback'],
      [false, 'overloaded'],
    ]);
  });
});

describe('fleet options', () => {
  const pool = (limit = 10) =>
    new ConcurrencyLimiter({ store: memoryStore(), limit, leaseTtl: '1m' });

  it.each([
    [{ limiter: {} }, 'adaptiveConcurrency.fleet.limiter'],
    [{ limiter: pool(), key: '' }, 'adaptiveConcurrency.fleet.key'],
    [{ limiter: pool(), reserve: 0.5 }, 'adaptiveConcurrency.fleet.reserve'],
    [{ limiter: pool(), criticalReserve: 1.5 }, 'adaptiveConcurrency.fleet.criticalReserve'],
    // 2 × (1 − 0.2 − 0.1) = 1.4 leaves one; 1 × 0.7 leaves none to sheddable requests
    [{ limiter: pool(1) }, 'adaptiveConcurrency.fleet.criticalReserve'],
    [{ limiter: pool(3), defaultReserve: 0.5 }, 'adaptiveConcurrency.fleet.defaultReserve'],
  ])('refuses %j at construction', (fleet, field) => {
    const error = configErrorOf(() => adaptiveConcurrency({ fleet } as never));
    expect(error.field).toBe(field);
  });

  it('tryAcquire refuses (the pool has to be asked), acquire answers', async () => {
    const shed = adaptiveConcurrency({ fleet: { limiter: pool(2) } });
    expect(() => shed.tryAcquire()).toThrow(RateLimitArgumentError);
    expect((await shed.acquire()).allowed).toBe(true);
    expect(shed.fleet).toMatchObject({
      key: 'overload',
      reserves: { critical: 200, default: 100 },
    });
  });
});
