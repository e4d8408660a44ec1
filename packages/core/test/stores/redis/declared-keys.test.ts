/**
 * Every script the store runs touches only the keys it declares (Redis Cluster routes by the
 * declared keys, Dragonfly refuses undeclared ones): the conformance table runs one call at a
 * time and batched, with per-caller and per-policy state keys, plus leases, on a redis-server
 * of this file's own, while MONITOR records each script call and the commands it ran; then
 * each command's keys (as `COMMAND GETKEYS` reads them) must be among its call's KEYS. No
 * script is exempt, and every generated script must have been audited.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { useOwnRedisServer } from '../../../../../test/harness/redis.js';
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
} from '../../../src/index.js';
import { fixedScripts } from '../../../src/stores/scripts.js';
import { SCENARIOS } from '../../conformance/algorithms/index.js';
import { describeConformance, fakeClock } from '../../conformance/table.js';

jest.setTimeout(60_000);

const own = useOwnRedisServer();

/** One script call as MONITOR saw it, and the commands it ran. */
interface ScriptCall {
  script: string;
  declared: string[];
  ran: string[][];
}
const calls: ScriptCall[] = [];
/** Resolved when MONITOR shows the ECHO sent after the last call: every line is in. */
let seenEnd: () => void = () => undefined;
/** Resolved when MONITOR shows the ECHO sent once it was started: it records from then on. */
let seenStart: () => void = () => undefined;
let monitor: (Redis & { disconnect(): void }) | undefined;

// Every fixed script (each algorithm's, their batch and combined variants, the mixed engine,
// the leases, the clock probe, the change of a record for every key); the scripts composed for other mixes are made of the same parts.
const generated = fixedScripts();
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const nameBySha = new Map<string, string>(generated.map((s) => [s.sha1, s.name]));
/** An EVAL's script as sent, from MONITOR's quoted form (`\n`, `\"`, `\\` escaped). */
const unescapeMonitor = (text: string) =>
  text.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));

beforeAll(async () => {
  // Loaded ahead, so the store's EVALSHA finds each generated script and MONITOR names it by
  // its SHA1 (an EVAL's text comes back from MONITOR escaped, not byte for byte).
  for (const script of generated) await own().client.script('LOAD', script.source);
  // monitor() opens a connection of its own. No command goes to the server until MONITOR shows
  // a marker: a line that reached the monitoring connection before ioredis had switched it to
  // monitor mode failed every test of this file ("Command queue state error").
  const started = new Promise<void>((resolve) => {
    seenStart = resolve;
  });
  monitor = (await own().client.monitor()) as typeof monitor;
  monitor!.on('monitor', (_time: string, args: string[], source: string) => {
    const command = String(args[0]).toUpperCase();
    if (command === 'ECHO' && args[1] === 'audit-start') seenStart();
    if (command === 'ECHO' && args[1] === 'audit-end') seenEnd();
    if (source === 'lua') {
      calls.at(-1)?.ran.push(args.map(String));
    } else if (command === 'EVAL' || command === 'EVALSHA') {
      const sha = command === 'EVAL' ? sha1(unescapeMonitor(args[1]!)) : args[1]!;
      const count = Number(args[2]);
      calls.push({
        script: nameBySha.get(sha) ?? `composed ${sha.slice(0, 8)}`,
        declared: args.slice(3, 3 + count).map(String),
        ran: [],
      });
    }
  });
  await own().client.echo('audit-start');
  await started;
});
afterAll(() => {
  monitor?.disconnect();
});

describeConformance('per-caller state keys', SCENARIOS, (clock) =>
  redisStore({ client: own().client, clock, batch: false }),
);
describeConformance(
  'batched',
  SCENARIOS,
  (clock) => redisStore({ client: own().client, clock, batch: { maxDecisions: 4 } }),
  'at once',
);

const everyKind = (): Policy[] => [
  fixedWindow({ limit: 3, window: '1s' }),
  slidingLog({ limit: 3, window: '1s' }),
  tokenBucket({ limit: 3, window: '1s' }),
  gcra({ limit: 3, window: '1s' }),
  slidingWindow({ limit: 3, window: '1s' }),
  leakyBucket({ limit: 3, window: '1s' }),
  smoothBursty({ limit: 3, window: '1s' }),
  smoothWarmingUp({ limit: 3, window: '1s', warmup: '1s' }),
];

/** The `i`th kind of `everyKind()` again, with another limit and window. */
const twoOf = (i: number): Policy =>
  [
    fixedWindow({ limit: 5, window: '1m' }),
    slidingLog({ limit: 5, window: '1m' }),
    tokenBucket({ limit: 5, window: '1m' }),
    gcra({ limit: 5, window: '1m' }),
    slidingWindow({ limit: 5, window: '1m' }),
    leakyBucket({ limit: 5, window: '1m' }),
    smoothBursty({ limit: 5, window: '1m' }),
    smoothWarmingUp({ limit: 5, window: '1m', warmup: '10s' }),
  ][i]!;

test.each([
  ['every call of one policy of each kind, and of all kinds together', true],
  ['the same, batched', false],
])('%s, per caller and per policy', async (_label, oneByOne) => {
  const time = fakeClock();
  const store = redisStore({ client: own().client, clock: time.clock, batch: !oneByOne });
  const limiters: RateLimiter[] = [];
  for (const stateKeys of ['per-caller', 'per-policy'] as const) {
    // Alone; two of a kind (its combined script); every kind; two kinds (a composed script).
    const pairs = everyKind().map((p, i) => [p, twoOf(i)]);
    const sets = [...everyKind().map((p) => [p]), ...pairs, everyKind(), everyKind().slice(0, 2)];
    for (const policies of sets) {
      limiters.push(
        new RateLimiter({ store, policies, stateKeys, prefix: `audit${limiters.length}` }),
      );
    }
  }
  for (const limiter of limiters) {
    const round = [
      () => limiter.consume('k'),
      () => limiter.consume('k', { cost: 2 }),
      () => limiter.peek('k'),
      () => limiter.acquire('k', { maxWait: 0 }),
    ];
    if (oneByOne) for (const call of round) await call();
    else await Promise.all([...round, ...round].map((call) => call()));
    await limiter.refund('k');
    await limiter.block('k', '1s');
    await limiter.unblock('k');
    await limiter.reset('k');
  }
});

test('leases: acquire, renew, release, reset', async () => {
  const limiter = new ConcurrencyLimiter({
    store: redisStore({ client: own().client }),
    limit: 2,
    leaseTtl: '10s',
    prefix: 'audit-leases',
  });
  const held = await limiter.acquire('k');
  await held.lease!.renew();
  await held.lease!.release();
  await limiter.acquire('k');
  await limiter.reset('k');
});

test('live limits for every key: the compare-and-set of the record', async () => {
  const limiter = new RateLimiter({
    store: redisStore({ client: own().client }),
    policies: [fixedWindow({ limit: 5, window: '1m', name: 'q' })],
    prefix: 'audit-global',
    liveLimits: true,
  });
  await limiter.setLimit('*', { policy: 'q', limit: 10 }, { ttl: '1m' });
  await limiter.consume('k');
  await limiter.clearLimit('*');
  await limiter.close();
});

/**
 * The one named exception: fixedWindow with a limit too large for its packed count (layout 0)
 * counts at `<base>:<window index>`, a key derived from a declared base (the same hash tag, so
 * the same slot) but not itself declared. Such a policy is refused nowhere today; servers that
 * refuse undeclared keys cannot run it (docs/redis-servers.md).
 */
function perWindowKey(call: ScriptCall, key: string): boolean {
  return (
    /fixed-window|engine|composed/.test(call.script) &&
    call.declared.some(
      (base) => key.startsWith(`${base}:`) && /^\d+$/.test(key.slice(base.length + 1)),
    )
  );
}

test('every script call touched only the keys it declared; every generated script was audited', async () => {
  // MONITOR lines arrive a little after the replies: wait for a marker sent after them.
  const ended = new Promise<void>((resolve) => {
    seenEnd = resolve;
  });
  // The audit's own check: a script that reads a key it did not declare is caught.
  await own().client.eval("return redis.call('GET', 'audit-undeclared')", 1, 'audit-declared');
  await own().client.echo('audit-end');
  await ended;
  const getKeys = new Map<string, string[]>();
  const undeclared: string[] = [];
  for (const call of calls) {
    for (const command of call.ran) {
      const id = JSON.stringify(command);
      let keys = getKeys.get(id);
      if (keys === undefined) {
        keys = (await own()
          .client.call('COMMAND', 'GETKEYS', ...command)
          .catch(() => [])) as string[];
        getKeys.set(id, keys);
      }
      for (const key of keys) {
        if (call.declared.includes(key) || perWindowKey(call, key)) continue;
        undeclared.push(`${call.script}: ${command.join(' ')}`);
      }
    }
  }
  expect(undeclared).toEqual([expect.stringMatching(/^composed \w+: GET audit-undeclared$/)]);
  const audited = new Set(calls.filter((c) => c.ran.length > 0).map((c) => c.script));
  const missing = generated.map((s) => s.name).filter((name) => !audited.has(name));
  expect(missing).toEqual([]);
  expect(calls.length).toBeGreaterThan(1000);
});
