/**
 * Exactness across OS processes: several forked "app servers", each with its own connection,
 * its own skewed clock and many decisions in flight, race on one key of the harness Redis. The
 * number admitted must equal the limit exactly, whatever the clocks say (Redis TIME decides).
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { Redis } from 'ioredis';
import { connectIoredis, flushRedis, keysWithTtl } from '../../../../test/harness/redis.js';
import {
  fixedWindow,
  gcra,
  RateLimiter,
  redisStore,
  slidingLog,
  tokenBucket,
} from '../../src/index';
import { buildCoreForChildren } from './build-core.js';
import { ask, forkChildren, stopChildren } from './children.js';

jest.setTimeout(45_000);

/** Per-process clock offsets (ms): hours apart, as badly synchronised app servers could be. */
const OFFSETS = [-3 * 3_600_000, 0, 2 * 3_600_000, 17 * 60_000];
const REQUESTS_PER_PROCESS = 100;
const LIMIT = 50;

interface Reply {
  admitted: number;
  refunded: number;
  reasons: string[];
  now: number;
}

let core: string;
let children: ChildProcess[] = [];
let redis: Redis;

beforeAll(async () => {
  redis = connectIoredis();
  await flushRedis(redis);
  core = buildCoreForChildren();
  children = await forkChildren(
    'decide-child.cjs',
    core,
    OFFSETS.map((offset) => ({ CLOCK_OFFSET_MS: String(offset) })),
  );
});

afterAll(async () => {
  stopChildren(children);
  redis?.disconnect();
  if (core) rmSync(dirname(core), { recursive: true, force: true });
});

const KINDS = ['fixedWindow', 'slidingLog', 'tokenBucket', 'gcra', 'concurrency'];
// Batched: each process's decisions go out as batch scripts (redisStore's default, up to 128 decisions each).
test.each(KINDS.flatMap((kind) => [true, false].map((batch) => [kind, batch] as const)))(
  `%s (batch: %s): ${OFFSETS.length} processes with skewed clocks admit exactly the limit on one key`,
  async (kind, batch) => {
    const prefix = `procs${process.pid}${kind}${batch}`;
    const replies = await Promise.all(
      children.map((child) =>
        ask<Reply>(child, { kind, prefix, requests: REQUESTS_PER_PROCESS, batch }),
      ),
    );
    // The skew really is in place: each child's Date.now is off by its offset.
    const realNow = Date.now();
    replies.forEach((reply, i) => {
      expect(Math.abs(reply.now - realNow - OFFSETS[i]!)).toBeLessThan(60_000);
    });
    expect(replies.flatMap((r) => r.reasons)).toEqual([]);
    const admitted = replies.reduce((sum, r) => sum + r.admitted, 0);
    expect(admitted).toBe(LIMIT);
    const keys = (await keysWithTtl(redis)).filter((k) => k.key.startsWith(prefix));
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) expect(k.pttl).toBeGreaterThan(0);
  },
);

const REFUND_POLICIES = {
  fixedWindow: () => fixedWindow({ limit: 50, window: '1d' }),
  slidingLog: () => slidingLog({ limit: 50, window: '1d' }),
  tokenBucket: () => tokenBucket({ limit: 50, window: '1d' }),
  gcra: () => gcra({ limit: 50, window: '1d' }),
};

test.each(
  Object.keys(REFUND_POLICIES).flatMap((kind) =>
    [true, false].map((batch) => [kind, batch] as const),
  ),
)(
  `%s (batch: %s): ${OFFSETS.length} processes consuming and refunding at once lose no refund and never over-admit`,
  async (kind, batch) => {
    const policy = REFUND_POLICIES[kind as keyof typeof REFUND_POLICIES];
    const prefix = `refunds${process.pid}${kind}${batch}`;
    const replies = await Promise.all(
      children.map((child) =>
        ask<Reply>(child, { kind, prefix, requests: REQUESTS_PER_PROCESS, batch, refundEvery: 2 }),
      ),
    );
    expect(replies.flatMap((r) => r.reasons)).toEqual([]);
    const admitted = replies.reduce((sum, r) => sum + r.admitted, 0);
    const refunded = replies.reduce((sum, r) => sum + r.refunded, 0);
    // Never more than the limit kept; refunds raced the consumes of the other processes.
    expect(refunded).toBeGreaterThan(0);
    expect(admitted - refunded).toBeLessThanOrEqual(LIMIT);
    // Every unit is accounted for: what is left is the limit minus what was kept.
    const limiter = new RateLimiter({
      store: redisStore({ client: redis }),
      policies: policy(),
      prefix,
    });
    const now = await limiter.peek('shared', { cost: 0 });
    expect(now.remaining).toBe(LIMIT - (admitted - refunded));
  },
);
