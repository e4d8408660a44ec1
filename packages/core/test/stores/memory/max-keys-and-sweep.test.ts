/** The memory store: bounded by maxKeys without evicting live counters, swept, never keeps the process alive. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fixedWindow, gcra, memoryStore, RateLimiter } from '../../../src/index';

test('a full table never evicts a live counter: new keys are denied with reason store-full', async () => {
  let now = 1_700_000_000_000;
  const store = memoryStore({ clock: () => now, maxKeys: 3 });
  const limiter = new RateLimiter({ store, policies: fixedWindow({ limit: 2, window: '10s' }) });
  for (const key of ['a', 'b', 'c']) expect((await limiter.consume(key)).allowed).toBe(true);
  const refused = await limiter.consume('attacker-1');
  expect(refused).toMatchObject({ allowed: false, reason: 'store-full' });
  expect(refused.retryAfter).toBeGreaterThan(0);
  expect(store.size).toBe(3);
  // The live counters are intact: 'a' has one request left, then is limited.
  expect(await limiter.consume('a')).toMatchObject({ allowed: true, remaining: 0 });
  expect((await limiter.consume('a')).allowed).toBe(false);
  // Once their windows have passed the keys are expired and swept to make room.
  now += 10_000;
  expect(await limiter.consume('attacker-1')).toMatchObject({ allowed: true, remaining: 1 });
  expect(store.size).toBeLessThanOrEqual(3);
});

test('a multi-policy decision needs room for every one of its keys', async () => {
  const now = 1_700_000_000_000;
  const store = memoryStore({ clock: () => now, maxKeys: 3 });
  const limiter = new RateLimiter({
    store,
    policies: [fixedWindow({ limit: 2, window: '1s' }), gcra({ limit: 2, window: '1s' })],
  });
  expect((await limiter.consume('a')).allowed).toBe(true);
  expect(await limiter.consume('b')).toMatchObject({ allowed: false, reason: 'store-full' });
  expect(store.size).toBe(2);
});

test('sweep drops expired keys and keeps live ones', async () => {
  let now = 1_700_000_000_000;
  const store = memoryStore({ clock: () => now });
  const short = new RateLimiter({
    store,
    policies: fixedWindow({ limit: 1, window: '1s' }),
    prefix: 's',
  });
  const long = new RateLimiter({
    store,
    policies: fixedWindow({ limit: 1, window: '1h' }),
    prefix: 'l',
  });
  for (let i = 0; i < 50; i++) {
    await short.consume(`k${i}`);
    await long.consume(`k${i}`);
  }
  expect(store.size).toBe(100);
  now += 1000;
  expect(store.sweep()).toBe(50);
  expect(store.size).toBe(50);
  expect((await long.consume('k1')).allowed).toBe(false);
});

test('the sweep timer never keeps the process alive', () => {
  const dist = join(__dirname, '../../../dist/index.js');
  // The suite runs after the build (npm test builds first); the check needs the real module.
  expect(existsSync(dist)).toBe(true);
  const script = `
    import { memoryStore, RateLimiter, fixedWindow } from ${JSON.stringify(dist)};
    const limiter = new RateLimiter({ store: memoryStore(), policies: fixedWindow({ limit: 5, window: '1h' }) });
    const d = await limiter.consume('k');
    console.log(JSON.stringify({ allowed: d.allowed, remaining: d.remaining }));
  `;
  // A ref'd 60 s sweep interval would hold the child for a minute; it must exit at once.
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    timeout: 15_000,
    encoding: 'utf8',
  });
  expect(JSON.parse(out)).toEqual({ allowed: true, remaining: 4 });
});

describe('limiters sharing one store and prefix share their keys', () => {
  // Each limiter remembers the entry it last saw per key; that must never hide what another
  // limiter (or a reset, an expiry, a sweep) did to the key since.
  const policies = () => [fixedWindow({ limit: 3, window: '10s' })];
  const twoPolicies = () => [
    fixedWindow({ limit: 3, window: '10s' }),
    gcra({ limit: 5, window: '10s' }),
  ];

  test.each([
    ['one policy', policies],
    ['two policies', twoPolicies],
  ])('%s: counts, resets, expiry and sweeps are seen by both', async (_, make) => {
    let now = 1_700_000_000_000;
    const store = memoryStore({ clock: () => now });
    const a = new RateLimiter({ store, policies: make() });
    const b = new RateLimiter({ store, policies: make() });
    expect((await a.consume('k')).remaining).toBe(2);
    expect((await b.consume('k')).remaining).toBe(1);
    expect((await a.consume('k')).remaining).toBe(0);
    expect((await b.consume('k')).allowed).toBe(false);
    // A reset through one limiter frees the key for both.
    await b.reset('k');
    expect((await a.consume('k')).remaining).toBe(2);
    expect((await b.consume('k')).remaining).toBe(1);
    // Expiry noticed by one limiter (which drops the entry) starts the key over for both.
    now += 10_000;
    expect((await b.consume('k')).remaining).toBe(2);
    expect((await a.consume('k')).remaining).toBe(1);
    // A sweep drops the entry behind both limiters' backs; the new one is shared again.
    now += 10_000;
    expect(store.sweep()).toBeGreaterThan(0);
    expect(store.size).toBe(0);
    // A third limiter, which remembers nothing, makes the new entry.
    const c = new RateLimiter({ store, policies: make() });
    expect((await c.consume('k')).remaining).toBe(2);
    expect((await a.consume('k')).remaining).toBe(1);
    expect((await b.consume('k')).remaining).toBe(0);
    expect(store.size).toBe(make().length);
  });

  test('a full table swept to make room drops entries the limiters remembered', async () => {
    let now = 1_700_000_000_000;
    const store = memoryStore({ clock: () => now, maxKeys: 2 });
    const a = new RateLimiter({ store, policies: policies() });
    const b = new RateLimiter({ store, policies: policies() });
    await a.consume('x', { cost: 3 });
    await a.consume('y');
    now += 10_000;
    // 'z' needs room: the full sweep drops the expired 'x' and 'y'.
    expect((await b.consume('z')).allowed).toBe(true);
    // 'x' starts over; the limiter that remembered its old, full entry sees the new one.
    expect((await b.consume('x')).remaining).toBe(2);
    expect((await a.consume('x')).remaining).toBe(1);
    expect((await b.consume('x')).remaining).toBe(0);
  });
});
