/**
 * Redis memory per key for every algorithm, measured with `MEMORY USAGE <key> SAMPLES 0` on a
 * throwaway redis-server this script starts on a free port (and ends, by its PID). Prints a Markdown table
 * for docs/algorithms.md.
 *
 *   TS_NODE_TRANSPILE_ONLY=1 node --loader ts-node/esm docs/figures/memory-usage.mts
 *
 * Each row runs a fresh limiter on one key (`rl:{user:12345}:<policy id>`, the default prefix)
 * with a fake clock, spreading its requests evenly over one window so that windowed state is as
 * large as the limit lets it get, then sums MEMORY USAGE over the keys the policy wrote.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';
import {
  ConcurrencyLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  type Policy,
  RateLimiter,
  redisStore,
  slidingLog,
  slidingWindow,
  smoothBursty,
  smoothWarmingUp,
  tokenBucket,
} from '../../packages/core/src/index.ts';

interface Row {
  label: string;
  policy: Policy;
  /** Requests sent, evenly spread over one window. */
  requests: number;
}

const rows: Row[] = [
  { label: 'fixedWindow', policy: fixedWindow({ limit: 100, window: '1m' }), requests: 100 },
  { label: 'slidingLog', policy: slidingLog({ limit: 100, window: '1m' }), requests: 1 },
  { label: 'slidingLog', policy: slidingLog({ limit: 100, window: '1m' }), requests: 100 },
  { label: 'slidingLog', policy: slidingLog({ limit: 1000, window: '1m' }), requests: 1000 },
  { label: 'slidingWindow', policy: slidingWindow({ limit: 100, window: '1m' }), requests: 1 },
  { label: 'slidingWindow', policy: slidingWindow({ limit: 100, window: '1m' }), requests: 100 },
  {
    label: 'slidingWindow',
    policy: slidingWindow({ limit: 1000, window: '1m', buckets: 60 }),
    requests: 1000,
  },
  { label: 'tokenBucket', policy: tokenBucket({ limit: 100, window: '1m' }), requests: 100 },
  { label: 'gcra', policy: gcra({ limit: 100, window: '1m' }), requests: 100 },
  {
    label: 'leakyBucket',
    policy: leakyBucket({ limit: 100, window: '1m', burst: 20 }),
    requests: 100,
  },
  { label: 'smoothBursty', policy: smoothBursty({ limit: 100, window: '1m' }), requests: 100 },
  {
    label: 'smoothWarmingUp',
    policy: smoothWarmingUp({ limit: 100, window: '1m', warmup: '10s' }),
    requests: 100,
  },
];

const T0 = 1_699_977_600_000;

/** Sums MEMORY USAGE over every key the limiter wrote and prints one table row. */
async function printRow(label: string, requests: number, unit = ''): Promise<void> {
  const keys = await redis.keys('rl:*');
  let bytes = 0;
  const encodings = new Set<string>();
  let valueBytes = 0;
  for (const key of keys) {
    bytes += Number(await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    const type = await redis.type(key);
    encodings.add(`${type} (${String(await redis.call('OBJECT', 'ENCODING', key))})`);
    if (type === 'string') valueBytes += await redis.strlen(key);
  }
  console.log(
    `| \`${label}\` | ${requests}${unit ? ` ${unit}` : ''} | ${keys.length} | ${[...encodings].join(', ')} | ${valueBytes || '—'} | ${bytes} |`,
  );
}

/** A free TCP port on 127.0.0.1. */
async function freePort(): Promise<number> {
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as net.AddressInfo;
  probe.close();
  await once(probe, 'close');
  return port;
}

// Our own server (never the one on 6379): in memory only, ended by its PID below.
const port = await freePort();
const server = spawn(
  process.env.REDIS_SERVER_BIN ?? 'redis-server',
  ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
  { stdio: 'ignore' },
);
const redis = new Redis({ port, host: '127.0.0.1', retryStrategy: (n) => (n < 50 ? 50 : null) });
// Refused connections while the server starts are retried; anything else fails a command.
redis.on('error', () => undefined);
try {
  const info = await redis.info('server');
  const version = /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
  console.log(
    `Redis ${version}, MEMORY USAGE <key> SAMPLES 0, key \`user:12345\`, prefix \`rl\`\n`,
  );
  console.log(
    '| policy | requests in the window | keys | encoding | value bytes | MEMORY USAGE (bytes) |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) {
    await redis.flushall();
    let now = T0;
    const limiter = new RateLimiter({
      store: redisStore({ client: redis, clock: () => now }),
      policies: [row.policy],
    });
    const step = row.policy.window / row.requests;
    for (let i = 0; i < row.requests; i++) {
      await limiter.consume('user:12345');
      now += step;
    }
    const options = JSON.stringify(row.policy.options).replace(/"/g, '');
    await printRow(`${row.label}(${options})`, row.requests);
  }
  // ConcurrencyLimiter: one sorted set of leases per key, measured with leases still held.
  for (const held of [1, 5, 100]) {
    await redis.flushall();
    const now = T0;
    const limiter = new ConcurrencyLimiter({
      store: redisStore({ client: redis, clock: () => now }),
      limit: 100,
      leaseTtl: '1m',
    });
    for (let i = 0; i < held; i++) await limiter.acquire('user:12345');
    await printRow("ConcurrencyLimiter({limit:100,leaseTtl:'1m'})", held, 'leases held');
  }
  // For comparison only: the same ten counts as a hash (sub-window index → count), the other
  // natural layout for slidingWindow, which also needs HDEL of old fields on every write.
  await redis.flushall();
  const index = Math.floor((T0 * 1000) / 6_000_000);
  const fields: string[] = [];
  for (let i = 0; i < 10; i++) fields.push(String(index - i), '10');
  await redis.hset('rl:{user:12345}:swAbCdEfGh', ...fields);
  const hashBytes = await redis.call(
    'MEMORY',
    'USAGE',
    'rl:{user:12345}:swAbCdEfGh',
    'SAMPLES',
    '0',
  );
  console.log(`\n(not used) the same 10 counts as a hash of index → count: ${hashBytes} bytes`);
} finally {
  redis.disconnect();
  server.kill('SIGTERM');
}
