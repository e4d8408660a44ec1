/**
 * `pnpm --filter @floodgate/bench run live-limits`: what live limits cost on Redis, side by side
 * in one run (ratios, never asserted). One fixedWindow + gcra limiter, 64 callers in flight over
 * 1 000 keys, on its own redis-server; rounds interleave the subjects so drift hits them alike:
 *   off           liveLimits: false (batched, one key per caller: the default)
 *   off, policy   liveLimits: false, stateKeys 'per-policy' (batched: the layout a live limiter
 *                 keeps, without live limits)
 *   off, single   liveLimits: false, batch: false, stateKeys 'per-policy' (one EVALSHA a call)
 *   on            liveLimits: true, no key overridden (batched)
 *   on, 1 %       liveLimits: true, every hundredth key overridden
 *   on, 10 %      liveLimits: true, every tenth key overridden
 *   on, '*'       liveLimits: true, an override for every key (setLimit('*')) in force
 * and, for a limiter of one policy (fixedWindow alone, where the default layout is the live
 * one: one key per policy), `one, off` and `one, on, 1 %`. Each ratio is the median over the
 * rounds of the subject's rate over its baseline's in the same round (`off` and `off, policy`;
 * `one, off` for the one-policy rows).
 */
import { fixedWindow, gcra, RateLimiter, redisStore } from '@floodgate/core';
import { startRedisServer } from '@floodgate/redis-server';
import { Redis } from 'ioredis';

const KEYS = 1000;
const IN_FLIGHT = 64;
const ROUND_MS = 2000;
/** BENCH_ROUNDS=<n>: more rounds on a noisy machine. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const one = () => [fixedWindow({ limit: 1_000_000, window: '1h', name: 'hour' })];
const policies = () => [
  fixedWindow({ limit: 1_000_000, window: '1h', name: 'hour' }),
  gcra({ limit: 1_000_000, window: '1m', name: 'minute' }),
];

/** Decisions per second of `limiter` for ROUND_MS, IN_FLIGHT calls at a time. */
async function throughput(limiter: RateLimiter): Promise<number> {
  const end = Date.now() + ROUND_MS;
  let done = 0;
  let next = 0;
  const caller = async () => {
    while (Date.now() < end) {
      await limiter.consume(`user${next++ % KEYS}`);
      done++;
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, caller));
  return (done * 1000) / (Date.now() - started);
}

async function main(): Promise<void> {
  const server = await startRedisServer();
  const client = new Redis(server.url);
  try {
    // Each subject its own prefix; batched unless `batch: false`.
    const make = (
      prefix: string,
      options: { one?: boolean; batch?: false; perPolicy?: boolean; live?: boolean } = {},
    ) =>
      new RateLimiter({
        store: redisStore({ client, ...(options.batch === false ? { batch: false } : {}) }),
        policies: options.one ? one() : policies(),
        prefix,
        ...(options.perPolicy ? { stateKeys: 'per-policy' as const } : {}),
        ...(options.live ? { liveLimits: true } : {}),
      });
    const subjects: Array<[string, RateLimiter]> = [
      ['off', make('a')],
      ['off, policy', make('f', { perPolicy: true })],
      ['off, single', make('b', { batch: false, perPolicy: true })],
      ['on', make('c', { live: true })],
      ['on, 1 %', make('g', { live: true })],
      ['on, 10 %', make('d', { live: true })],
      ["on, '*'", make('e', { live: true })],
      ['one, off', make('h', { one: true })],
      ['one, on, 1 %', make('i', { one: true, live: true })],
    ];
    const subject = (name: string) => subjects.find(([n]) => n === name)![1];
    await subject("on, '*'").setLimit('*', { policy: 'hour', limit: 2_000_000 });
    for (const [name, every] of [
      ['on, 1 %', 100],
      ['on, 10 %', 10],
      ['one, on, 1 %', 100],
    ] as const) {
      for (let k = 0; k < KEYS; k += every) {
        await subject(name).setLimit(`user${k}`, { policy: 'hour', limit: 2_000_000 });
      }
    }
    const rates = new Map<string, number[]>(subjects.map(([name]) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, limiter] of subjects) rates.get(name)!.push(await throughput(limiter));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    // The median of the rounds' ratios: each round's subjects ran close together.
    const ratio = (name: string, base: string) =>
      median(rates.get(name)!.map((r, i) => r / rates.get(base)![i]!)).toFixed(3);
    console.log(
      `live limits: ${IN_FLIGHT} in flight, ${KEYS} keys, median of ${ROUNDS} rounds of ${ROUND_MS} ms`,
    );
    for (const [name] of subjects) {
      const r = Math.round(median(rates.get(name)!))
        .toString()
        .padStart(7);
      const against = name.startsWith('one')
        ? `×${ratio(name, 'one, off')} of one, off`
        : `×${ratio(name, 'off')} of off  ×${ratio(name, 'off, policy')} of off, policy`;
      console.log(`${name.padEnd(12)} ${r}/s  ${against}`);
    }
  } finally {
    client.disconnect();
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
