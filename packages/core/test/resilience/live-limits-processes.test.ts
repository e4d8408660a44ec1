/**
 * Live limits across OS processes: four forked "app servers" decide on one key while this
 * process raises its limit. Every decision that Redis ran after setLimit resolved (its TIME,
 * sent just before it on the same connection, is later than a TIME taken once setLimit resolved)
 * answers with the new limit: no stale answer in any process.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis.js';
import { fixedWindow, RateLimiter, redisStore } from '../../src/index';
import { buildCoreForChildren } from './build-core.js';
import { ask, forkChildren, stopChildren } from './children.js';

jest.setTimeout(45_000);

const PROCESSES = 4;
const RUN_MS = 1500;

let core: string;
let children: ChildProcess[] = [];
let redis: Redis;

beforeAll(async () => {
  redis = connectIoredis();
  await flushRedis(redis);
  core = buildCoreForChildren();
  children = await forkChildren(
    'live-child.cjs',
    core,
    Array.from({ length: PROCESSES }, () => ({})),
  );
});

afterAll(async () => {
  stopChildren(children);
  redis?.disconnect();
  if (core) rmSync(dirname(core), { recursive: true, force: true });
});

test(`${PROCESSES} processes deciding on one key all use a new limit once setLimit resolved`, async () => {
  const prefix = `live-processes-${process.pid}`;
  const admin = new RateLimiter({
    store: redisStore({ client: redis }),
    policies: [fixedWindow({ limit: 1_000_000, window: '1h', name: 'q' })],
    prefix,
    liveLimits: true,
  });
  const runs = children.map((child) =>
    ask<{ log: Array<[number, number]> }>(child, { prefix, ms: RUN_MS }),
  );
  // Once the processes are deciding (a loaded machine may start them late), change the limit.
  for (let i = 0; i < 200; i++) {
    if ((await admin.peek('shared', { cost: 0 })).remaining <= 1_000_000 - 40) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await admin.setLimit('shared', { policy: 'q', limit: 2_000_000 }, { carry: 'additive' });
  const [s, us] = await redis.time();
  const resolvedAt = Number(s) * 1_000_000 + Number(us);
  const logs = (await Promise.all(runs)).map((r) => r.log);

  // Decisions with the old limit were made (else this test could not fail), and every process
  // decided after the change.
  expect(logs.flat().some(([, limit]) => limit === 1_000_000)).toBe(true);
  for (const log of logs) {
    const after = log.filter(([t]) => t > resolvedAt);
    expect(after.length).toBeGreaterThan(0);
    expect(after.filter(([, limit]) => limit !== 2_000_000)).toEqual([]);
  }
  // Every decision was counted: the additive carry kept the units used before the change.
  const decided = logs.reduce((n, log) => n + log.length, 0);
  expect((await admin.peek('shared', { cost: 0 })).remaining).toBe(2_000_000 - decided);
});
