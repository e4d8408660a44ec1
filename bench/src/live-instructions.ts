/**
 * `pnpm --filter @floodgate/bench run live-instructions`: what live limits cost Redis per
 * decision, counted by callgrind (bench/src/callgrind.ts: instructions, which do not move with the
 * machine's load). One fixedWindow + gcra limiter, one key per policy (the layout a live limiter
 * keeps), each decision in a batch of 32 as redisStore sends it, on random callers:
 *   off            the batch script without live limits
 *   on             the live batch script, no key with live state
 *   on, 1 %        every hundredth caller's key holds an override
 *   on, 10 %       every tenth caller's does
 *   on, 100 %      every caller's does
 *   on, '*'        the calls carry an override for every key (each key marked, its mark renewed)
 * and the single live script (one EVALSHA a decision) on, 100 % and '*' for scale.
 * BENCH_ONE_POLICY=1: the same with fixedWindow alone. Takes a few minutes (valgrind).
 */
import { fixedWindow, gcra } from '@floodgate/core';
import type { Redis } from 'ioredis';
import { type CommandSubject, callgrindAvailable, instructionsPerCall } from './callgrind.js';
import { batchScriptFor, liveScriptFor, scriptFor } from './engine-scripts.js';
import { readLiveStorage } from './live-setup.js';
import { NEVER_DENY } from './subjects.js';

const BATCH = 32;
const CALLS = Number(process.env.BENCH_CALLS ?? 6_400);
/** BENCH_ONE_POLICY=1: fixedWindow alone (its calls are lone consumes, include/batch.lua). */
const ONE = process.env.BENCH_ONE_POLICY === '1';
const policies = () => [
  fixedWindow({ limit: NEVER_DENY, window: '1h', name: 'hour' }),
  ...(ONE ? [] : [gcra({ limit: NEVER_DENY, window: '1h', name: 'minute' })]),
];
const RAND = '__rand_int__';

/** An override's stored text, the global record and a caller's storage keys, as the store writes them. */
const liveTexts = () =>
  readLiveStorage(policies(), async (limiter, client) => {
    const keys = limiter.storageKeys('x');
    await limiter.setLimit('x', { policy: 'hour', limit: NEVER_DENY + 1 });
    const override = (await client.get(keys[keys.length - 1]!))!;
    await limiter.setLimit('*', { policy: ONE ? 'hour' : 'minute', limit: NEVER_DENY + 1 });
    const [record] = await client.keys('bench:lm*:global');
    const spec = (await client.get(record!))!;
    // The caller's part of each key, for redis-benchmark's randomiser.
    const shape = limiter.storageKeys(RAND);
    return { override, spec, shape };
  });

async function main() {
  if (!(await callgrindAvailable())) throw new Error('valgrind (callgrind) is not installed');
  const { override, spec, shape } = await liveTexts();
  const kinds = policies().map((p) => p.kind);
  const head = ['0', '', '1', '0'];
  const groups = policies().flatMap((p) => [p.kind, ...p.params.map(String)]);
  const lockouts = policies().map(() => '');
  const plain = batchScriptFor(scriptFor(kinds));
  const liveSingle = liveScriptFor(kinds);
  const live = batchScriptFor(liveSingle);
  const calls = (keys: string[]) => Array.from({ length: BATCH }, () => keys).flat();
  const plainArgs = [...head, ...groups, ...lockouts];
  const batchOf = (script: { sha1: string }, keys: string[], args: string[]) => [
    'EVALSHA',
    script.sha1,
    String(BATCH * keys.length),
    ...calls(keys),
    '1',
    String(keys.length),
    String(args.length),
    ...args,
  ];
  // The caller's live key: its block key, which holds its overrides too.
  const liveKey = shape.at(-1)!;
  const overrides = (every: number) => async (client: Redis) => {
    for (let n = 0; n < 1000; n += every) {
      await client.set(liveKey.replace(RAND, String(n).padStart(12, '0')), override);
    }
  };
  const subjects: CommandSubject[] = [
    {
      name: 'off (per decision in a batch of 32)',
      script: plain.source,
      command: batchOf(plain, shape, plainArgs),
      perCall: BATCH,
      // Every row runs with the same scripts loaded: Redis's Lua garbage collector walks them all.
      setup: async (client: Redis) => {
        for (const s of [live, liveSingle]) await client.script('LOAD', s.source);
      },
    },
    ...(
      [
        ['on', ['', ''], undefined],
        ['on, 1 %', ['', ''], overrides(100)],
        ['on, 10 %', ['', ''], overrides(10)],
        ['on, 100 %', ['', ''], overrides(1)],
        ["on, '*'", ['', spec], undefined],
      ] as const
    ).map(([name, specs, setup]) => ({
      name: `${name} (per decision in a batch of 32)`,
      script: live.source,
      command: batchOf(live, shape, [...plainArgs, ...specs]),
      perCall: BATCH,
      ...(setup && { setup }),
    })),
    ...(
      [
        ['on', ['', ''], undefined],
        ['on, 100 %', ['', ''], overrides(1)],
        ["on, '*'", ['', spec], undefined],
      ] as const
    ).map(([name, specs, setup]) => ({
      name: `${name}, the single live script (one EVALSHA a decision)`,
      script: liveSingle.source,
      command: ['EVALSHA', liveSingle.sha1, String(shape.length), ...shape, ...plainArgs, ...specs],
      ...(setup && { setup }),
    })),
  ];
  const rows = await instructionsPerCall(subjects, CALLS);
  const base = rows[0]!.instructionsPerCall;
  const lines = ['| live limits | instructions per decision | × off |', '|---|---|---|'];
  for (const r of rows) {
    const ratio = (r.instructionsPerCall / base).toFixed(3);
    lines.push(`| ${r.subject} | ${r.instructionsPerCall.toLocaleString('en-US')} | ${ratio} |`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
