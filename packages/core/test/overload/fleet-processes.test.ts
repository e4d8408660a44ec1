/**
 * The fleet-wide critical reserve across real OS processes: forked app servers, each with its
 * own connection and adaptive limit, share one pool on the harness Redis. Non-critical requests
 * racing from every process together fill exactly the unreserved share; a process killed while
 * holding leases gives them back after the pool's leaseTtl.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Redis } from 'ioredis';
import { connectIoredis, flushRedis } from '../../../../test/harness/redis.js';
import { buildCoreForChildren } from '../resilience/build-core.js';
import { ask, forkChildren, stopChildren } from '../resilience/children.js';

jest.setTimeout(30_000);

const CAPACITY = 20; // 20 × (1 − 0.3) = 14 non-critical leases fleet-wide
const LEASE_TTL_MS = 3000; // longer than the steps before the kill take on a busy machine
const PREFIX = `fleetproc${process.pid}`;

let core: string;
let children: ChildProcess[] = [];
let redis: Redis;

beforeAll(async () => {
  redis = connectIoredis();
  await flushRedis(redis);
  core = buildCoreForChildren();
  const env = {
    FLEET_CAPACITY: String(CAPACITY),
    FLEET_LEASE_TTL_MS: String(LEASE_TTL_MS),
    FLEET_PREFIX: PREFIX,
  };
  children = await forkChildren('fleet-child.cjs', core, [env, env, env]);
});

afterAll(async () => {
  stopChildren(children);
  redis?.disconnect();
  if (core) rmSync(dirname(core), { recursive: true, force: true });
});

const take = (child: ChildProcess, take: number, criticality: string) =>
  ask<{ admitted: number }>(child, { take, criticality }).then((r) => r.admitted);

/** Releases everything `child` holds, and waits until the pool holds at most `left` leases. */
async function releaseAll(child: ChildProcess, left: number): Promise<void> {
  await ask(child, { release: true });
  for (let i = 0; i < 100 && (await redis.zcard(`${PREFIX}:{api}:leases`)) > left; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('processes racing for the pool admit exactly its unreserved share; a killed one frees its leases at leaseTtl', async () => {
  const [a, b, c] = children as [ChildProcess, ChildProcess, ChildProcess];
  expect(await take(a, 4, 'default')).toBe(4); // so the process killed below holds some
  const racing = await Promise.all([
    take(a, 10, 'default'),
    take(b, 10, 'sheddable'),
    take(c, 10, 'default'),
  ]);
  const takenBy = Date.now(); // every lease of `a` expires by takenBy + LEASE_TTL_MS
  expect(racing.reduce((sum, n) => sum + n, 0)).toBe(10);
  expect(await redis.zcard(`${PREFIX}:{api}:leases`)).toBe(14);
  // critical requests take no lease and are admitted beside a full pool
  expect(await take(c, 10, 'critical')).toBe(10);

  // released leases free at once
  const heldByA = 4 + racing[0]!;
  await releaseAll(b, 14 - racing[1]!);
  await releaseAll(c, heldByA);
  expect(await take(b, 20, 'default')).toBe(14 - heldByA);
  await releaseAll(b, heldByA);

  // `a` dies holding its leases: they count until the pool's leaseTtl, then free
  a.kill('SIGKILL');
  expect(await take(c, 20, 'default')).toBe(14 - heldByA);
  await releaseAll(c, heldByA);
  await new Promise((resolve) => setTimeout(resolve, takenBy + LEASE_TTL_MS + 50 - Date.now()));
  expect(await take(c, 20, 'default')).toBe(14);
});
