/**
 * Measures the figures in docs/reliability.md (not a test: timings are never asserted).
 *
 *   node packages/core/test/resilience/run-ts.cjs packages/core/test/resilience/measure-reliability.ts
 *
 * Starts its own redis-servers, local cluster and sentinel setup on free 127.0.0.1 ports, drives
 * an open-loop load (one call every 5 ms, never waiting for the previous one), pauses / stops /
 * kills / restarts / fails over the servers, and prints what was answered, how fast, and how
 * long recovery took; then the multi-process exactness table. `MEASURE_ONLY=outages`, `faults`
 * (measure-leases.ts) or `exactness` (one round) runs one part.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { startRedisCluster } from '../../../../test/harness/cluster.js';
import { startRedisServer } from '../../../../test/harness/redis-server.js';
import {
  fixedWindow,
  memoryStore,
  RateLimiter,
  type RateLimiterOptions,
  redisStore,
} from '../../src/index.js';
import type { RedisClient } from '../../src/stores/redis-client.js';
import { buildCoreForChildren } from './build-core.js';
import { connectCluster } from './clients.js';
import { INTERVAL_MS, load, ms, recovery, row, rows, sleep, summarise } from './measure-common.js';
import { faultRows } from './measure-leases.js';

type ClientMaker = (url: string) => Promise<{ client: RedisClient; close: () => void }>;

const ioredisDefault: ClientMaker = async (url) => {
  const c = new Redis(url);
  c.on('error', () => undefined);
  return { client: c, close: () => c.disconnect() };
};
const ioredisFailFast: ClientMaker = async (url) => {
  const c = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  c.on('error', () => undefined);
  await new Promise((resolve) => c.once('ready', resolve));
  return { client: c, close: () => c.disconnect() };
};
const nodeRedisDefault: ClientMaker = async (url) => {
  const c = createClient({ url });
  c.on('error', () => undefined);
  await c.connect();
  return { client: c, close: () => c.destroy() };
};
const nodeRedisFailFast: ClientMaker = async (url) => {
  const c = createClient({ url, disableOfflineQueue: true });
  c.on('error', () => undefined);
  await c.connect();
  return { client: c, close: () => c.destroy() };
};

/** 1 s healthy, kill, `downMs` down, restart, 2 s after. */
async function outage(
  scenario: string,
  makeClient: ClientMaker,
  options: Partial<RateLimiterOptions>,
  downMs = 3000,
) {
  const server = await startRedisServer();
  const { client, close } = await makeClient(server.url);
  const limiter = new RateLimiter({
    store: redisStore({ client }),
    policies: [fixedWindow({ limit: 1_000_000, window: '1m' })],
    ...options,
  });
  const run = load(
    (k) => limiter.consume(k),
    (i) => `user${i % 100}`,
  );
  await sleep(1000);
  const killedAt = performance.now();
  await server.kill();
  await sleep(downMs);
  const restartAt = performance.now();
  await server.restart();
  const restartedAt = performance.now();
  await sleep(2000);
  const samples = await run.stop();
  row(scenario, summarise(samples, killedAt, restartAt), recovery(samples, restartedAt));
  close();
  await server.stop();
}

async function failover(kind: 'ioredis Cluster' | 'node-redis cluster') {
  const cluster = await startRedisCluster();
  const connected = await connectCluster(kind, cluster.startupNodes);
  const limiter = new RateLimiter({
    store: redisStore({ client: connected.client }),
    policies: [fixedWindow({ limit: 1_000_000, window: '1m' })],
    onStoreError: memoryStore(),
    timeout: 250,
  });
  const key = 'tenant-a';
  const probe = new Redis({ host: '127.0.0.1', port: cluster.nodes[0]!.port });
  const slot = Number(await probe.cluster('KEYSLOT', limiter.storageKeys(key)[0]!));
  probe.disconnect();
  const run = load(
    (k) => limiter.consume(k),
    () => key,
  );
  await sleep(1000);
  const killedAt = performance.now();
  await cluster.failover(slot);
  const promotedAt = performance.now();
  // The old master stays dead: both clients find the promoted replica by themselves.
  await sleep(3000);
  const samples = await run.stop();
  row(
    `${kind} failover, old master left dead (recovery counted from the kill); promotion took ${ms(promotedAt - killedAt)}`,
    summarise(samples, killedAt, promotedAt),
    recovery(samples, killedAt),
  );
  await connected.close();
  await cluster.stop();
}

async function overshoot(rounds: number) {
  const server = await startRedisServer();
  const core = buildCoreForChildren();
  const offsets = [-3 * 3_600_000, 0, 2 * 3_600_000, 17 * 60_000];
  const children: ChildProcess[] = offsets.map((offset) =>
    fork(join(__dirname, 'fixtures/decide-child.cjs'), [], {
      env: {
        ...process.env,
        FLOODGATE_CORE: core,
        CLOCK_OFFSET_MS: String(offset),
        REDIS_URL: server.url,
        REDIS_DB: '0',
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    }),
  );
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
  const ask = (child: ChildProcess, message: object) =>
    new Promise<{ admitted: number }>((resolve) => {
      child.once('message', resolve);
      child.send(message);
    });
  const lines: string[] = [];
  for (const kind of ['fixedWindow', 'slidingLog', 'tokenBucket', 'gcra', 'concurrency']) {
    let worst = 0;
    let exact = 0;
    for (let round = 0; round < rounds; round++) {
      const replies = await Promise.all(
        children.map((c) => ask(c, { kind, prefix: `m${round}`, requests: 100 })),
      );
      const admitted = replies.reduce((sum, r) => sum + r.admitted, 0);
      worst = Math.max(worst, admitted - 50);
      if (admitted === 50) exact++;
    }
    lines.push(`| ${kind} | ${rounds} | 4 × 100 | 50 | ${exact}/${rounds} | ${worst} |`);
    process.stderr.write(`${lines.at(-1)}\n`);
  }
  for (const c of children) c.disconnect();
  rmSync(dirname(core), { recursive: true, force: true });
  await server.stop();
  return lines;
}

async function main() {
  const only = process.env.MEASURE_ONLY;
  const quick = only === 'exactness';
  if (only === undefined || only === 'outages') await outages();
  if (only === undefined || only === 'faults') await faultRows();
  const exactness = only === undefined || quick ? await overshoot(quick ? 1 : 20) : [];
  printTables(exactness);
}

async function outages() {
  await outage("ioredis defaults, 'open', timeout 1 s (defaults)", ioredisDefault, {});
  await outage("ioredis defaults, 'open', timeout 100 ms", ioredisDefault, { timeout: 100 });
  await outage("ioredis defaults, 'open', timeout 100 ms, no breaker", ioredisDefault, {
    timeout: 100,
    circuitBreaker: false,
  });
  await outage("ioredis fail-fast (no offline queue, 0 retries), 'closed'", ioredisFailFast, {
    onStoreError: 'closed',
  });
  await outage('ioredis defaults, fallback memoryStore(), timeout 100 ms', ioredisDefault, {
    onStoreError: memoryStore(),
    timeout: 100,
  });
  await outage("node-redis defaults, 'open', timeout 100 ms", nodeRedisDefault, { timeout: 100 });
  await outage("node-redis disableOfflineQueue, 'open'", nodeRedisFailFast, {});
  await failover('ioredis Cluster');
  await failover('node-redis cluster');
}

function printTables(exactness: string[]) {
  const out: string[] = [];
  out.push(
    `Load: one call every ${INTERVAL_MS} ms (open loop), 1 s healthy, then the fault the scenario names.\n`,
  );
  out.push(
    '| scenario | asked during the fault | answers (reason: count) | latency p50 / p99 / max | store answers again, after the fault ended (failover rows: after the kill) |',
  );
  out.push('|---|---|---|---|---|');
  for (const line of rows) out.push(line);
  out.push(
    '\n| algorithm | rounds | processes × requests | limit | rounds exactly at limit | worst overshoot |',
  );
  out.push('|---|---|---|---|---|---|');
  for (const line of exactness) out.push(line);
  writeSync(1, `${out.join('\n')}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
