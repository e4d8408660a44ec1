/**
 * The override for every key across OS processes: four forked "app servers" decide on their own
 * keys, a shared one and one with an override of its own, while this process calls
 * setLimit('*'). Checked from their logs with Redis time (a TIME sent just before each decision
 * on the same connection): every decision Redis ran later than GLOBAL_BOUND_MS after setLimit
 * resolved answers with the new limit, in every process; the key with its own override keeps
 * it throughout. Each process learns of the change by its poll of the record.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis.js';
import { fixedWindow, RateLimiter, redisStore } from '../../src/index';
import { GLOBAL_BOUND_MS } from '../../src/live-global';
import { buildCoreForChildren } from './build-core.js';
import { ask, forkChildren, stopChildren } from './children.js';

jest.setTimeout(90_000);

const PROCESSES = 4;
const RUN_MS = 4000;
const NAME = `live-global-${process.pid}`;

type Entry = [time: number, key: string, limit: number];

let core: string;
let children: ChildProcess[] = [];
let redis: Redis;

beforeAll(async () => {
  redis = connectIoredis();
  await flushRedis(redis);
  core = buildCoreForChildren();
});

afterEach(() => {
  stopChildren(children);
  children = [];
});

afterAll(async () => {
  redis?.disconnect();
  if (core) rmSync(dirname(core), { recursive: true, force: true });
});

async function redisMicros(): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1_000_000 + Number(us);
}

async function run(): Promise<void> {
  const prefix = `live-global-${process.pid}`;
  children = await forkChildren(
    'live-global-child.cjs',
    core,
    Array.from({ length: PROCESSES }, () => ({ CONNECTION_NAME: NAME })),
  );
  const admin = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 1_000_000, window: '1h', name: 'q' })],
    prefix,
    liveLimits: true,
  });
  await admin.setLimit('vip', { policy: 'q', limit: 3_000_000 });
  const runs = children.map((child) => ask<{ log: Entry[] }>(child, { prefix, ms: RUN_MS }));
  // Once every process is deciding, change the limit of every key.
  for (let i = 0; i < 300; i++) {
    const used = 1_000_000 - (await admin.peek('shared', { cost: 0 })).remaining;
    if (used >= 40) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await admin.setLimit('*', { policy: 'q', limit: 2_000_000 }, { carry: 'additive' });
  const resolvedAt = await redisMicros();
  const logs = (await Promise.all(runs)).map((r) => r.log);
  await admin.close();

  const bound = resolvedAt + GLOBAL_BOUND_MS * 1000;
  // Decisions with the old limit were made (else this test could not fail).
  expect(logs.flat().some(([, key, limit]) => key !== 'vip' && limit === 1_000_000)).toBe(true);
  for (const log of logs) {
    const late = log.filter(([t, key]) => t > bound && key !== 'vip');
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter(([, , limit]) => limit !== 2_000_000)).toEqual([]);
    // A key with an override of its own keeps it throughout.
    expect(log.filter(([, key, limit]) => key === 'vip' && limit !== 3_000_000)).toEqual([]);
  }
  // How late each process took the change: its last decision with the old limit, after setLimit.
  const lag = Math.max(
    0,
    ...logs
      .flat()
      .filter(([, key, limit]) => key !== 'vip' && limit === 1_000_000)
      .map(([t]) => t - resolvedAt),
  );
  expect(lag).toBeLessThanOrEqual(GLOBAL_BOUND_MS * 1000);
  // Every decision was counted on the shared key: the additive carry kept the units used.
  const shared = logs.flat().filter(([, key]) => key === 'shared').length;
  expect((await admin.peek('shared', { cost: 0 })).remaining).toBe(2_000_000 - shared);
}

test(`${PROCESSES} processes all decide with a '*' change within ${GLOBAL_BOUND_MS} ms`, () =>
  run());
