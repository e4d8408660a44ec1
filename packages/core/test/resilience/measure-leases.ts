/**
 * Rows of the measured table in docs/reliability.md for faults other than a kill of a plain
 * server, and for leases: ConcurrencyLimiter.acquire (and the RateLimiter for comparison) with
 * Redis paused (CLIENT PAUSE), SIGSTOPped, dead, restarted, on a cluster failover and on a
 * Sentinel failover. Run through measure-reliability.ts (`MEASURE_ONLY=faults` for these alone).
 */
import { Redis } from 'ioredis';
import { createSentinel } from 'redis';
import { startRedisCluster } from '../../../../test/harness/cluster.js';
import { startRedisServer } from '../../../../test/harness/redis-server.js';
import { SENTINEL_MASTER_NAME, startRedisSentinel } from '../../../../test/harness/sentinel.js';
import {
  ConcurrencyLimiter,
  fixedWindow,
  memoryStore,
  RateLimiter,
  redisStore,
} from '../../src/index.js';
import { keySlot } from '../../src/stores/redis-batch.js';
import type { RedisClient } from '../../src/stores/redis-client.js';
import { connectCluster } from './clients.js';
import { type Answer, load, ms, recovery, row, sleep, summarise } from './measure-common.js';

type Fault =
  | 'CLIENT PAUSE 3000'
  | 'SIGSTOP 3 s'
  | 'SIGKILL, 3 s down, restart'
  | 'restart (SIGTERM)';
type What = 'acquire' | 'consume';
const TIMEOUT_MS = 100;

/** `consume`, or an `acquire` whose lease is released 20 ms later (as a short request would). */
function decider(
  what: What,
  client: RedisClient,
  extra: { onStoreError?: 'open' | ReturnType<typeof memoryStore>; timeout?: number } = {},
): (key: string) => Promise<Answer> {
  const options = { timeout: TIMEOUT_MS, ...extra };
  if (what === 'consume') {
    const limiter = new RateLimiter({
      store: redisStore({ client }),
      policies: [fixedWindow({ limit: 1_000_000, window: '1m' })],
      ...options,
    });
    return (key) => limiter.consume(key);
  }
  const slots = new ConcurrencyLimiter({
    store: redisStore({ client }),
    limit: 100_000,
    leaseTtl: '10s',
    ...options,
  });
  return async (key) => {
    const d = await slots.acquire(key);
    if (d.lease) setTimeout(() => d.lease!.release().catch(() => undefined), 20);
    return d;
  };
}

/** 1 s healthy, the fault, 2 s after; "while down" is the fault's span. */
async function fault(what: What, kind: Fault) {
  const server = await startRedisServer();
  const client = new Redis(server.url);
  client.on('error', () => undefined);
  const admin = new Redis(server.url);
  admin.on('error', () => undefined);
  const run = load(decider(what, client), (i) => `user${i % 100}`);
  await sleep(1000);
  const start = performance.now();
  if (kind === 'CLIENT PAUSE 3000') {
    await admin.client('PAUSE', '3000');
    await sleep(3000);
  } else if (kind === 'SIGSTOP 3 s') {
    process.kill(server.pid, 'SIGSTOP');
    await sleep(3000);
    process.kill(server.pid, 'SIGCONT');
  } else if (kind === 'SIGKILL, 3 s down, restart') {
    await server.kill();
    await sleep(3000);
    await server.restart();
  } else {
    await server.restart();
  }
  const end = performance.now();
  await sleep(2000);
  const samples = await run.stop();
  row(
    `${what}, ioredis defaults, 'open', timeout ${TIMEOUT_MS} ms: ${kind}`,
    summarise(samples, start, end),
    recovery(samples, end),
  );
  client.disconnect();
  admin.disconnect();
  await server.stop();
}

/** A cluster master (of the key's slot) killed and left dead; fallback memoryStore(). */
async function clusterFailover(kind: 'ioredis Cluster' | 'node-redis cluster') {
  const cluster = await startRedisCluster();
  const connected = await connectCluster(kind, cluster.startupNodes);
  const decide = decider('acquire', connected.client, {
    onStoreError: memoryStore(),
    timeout: 250,
  });
  const run = load(decide, () => 'tenant-a');
  await sleep(1000);
  const killedAt = performance.now();
  await cluster.failover(keySlot('{tenant-a}'));
  const promotedAt = performance.now();
  await sleep(3000);
  const samples = await run.stop();
  row(
    `acquire, ${kind} failover, old master left dead, fallback memoryStore(), timeout 250 ms (recovery from the kill); promotion took ${ms(promotedAt - killedAt)}`,
    summarise(samples, killedAt, promotedAt),
    recovery(samples, killedAt),
  );
  await connected.close();
  await cluster.stop();
}

/** The master killed under load; the sentinels promote the replica. */
async function sentinelFailover(what: What, kind: 'ioredis' | 'node-redis') {
  const sentinel = await startRedisSentinel();
  let client: RedisClient;
  let close: () => Promise<void>;
  if (kind === 'ioredis') {
    const c = new Redis({ sentinels: [...sentinel.sentinelNodes], name: SENTINEL_MASTER_NAME });
    c.on('error', () => undefined);
    await new Promise((resolve) => c.once('ready', resolve));
    client = c;
    close = async () => void c.disconnect();
  } else {
    const c = createSentinel({
      name: SENTINEL_MASTER_NAME,
      sentinelRootNodes: sentinel.sentinelNodes.map((n) => ({ ...n })),
    });
    c.on('error', () => undefined);
    await c.connect();
    client = c;
    close = async () => void (await c.destroy());
  }
  const run = load(decider(what, client, { timeout: 250 }), (i) => `user${i % 100}`);
  await sleep(1000);
  const killedAt = performance.now();
  await sentinel.failover();
  const promotedAt = performance.now();
  await sleep(3000);
  const samples = await run.stop();
  row(
    `${what}, ${kind} sentinel failover (down-after 400 ms), 'open', timeout 250 ms (recovery from the kill); promotion took ${ms(promotedAt - killedAt)}`,
    summarise(samples, killedAt, promotedAt),
    recovery(samples, killedAt),
  );
  await close();
  await sentinel.stop();
}

export async function faultRows(): Promise<void> {
  const faults: Fault[] = [
    'CLIENT PAUSE 3000',
    'SIGSTOP 3 s',
    'SIGKILL, 3 s down, restart',
    'restart (SIGTERM)',
  ];
  for (const kind of faults) await fault('acquire', kind);
  for (const kind of faults.slice(0, 2)) await fault('consume', kind);
  await clusterFailover('ioredis Cluster');
  await clusterFailover('node-redis cluster');
  for (const what of ['consume', 'acquire'] as const) {
    await sentinelFailover(what, 'ioredis');
    await sentinelFailover(what, 'node-redis');
  }
}
