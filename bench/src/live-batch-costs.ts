/**
 * `pnpm --filter @floodgate/bench run live-batch-costs`: what one batch of 32 fixedWindow
 * consumes costs Redis (callgrind instructions, bench/src/callgrind.ts) as the number of its
 * calls with an override grows, on fixed keys: none, one, three, every one. Two more rows take
 * the live part out of a call whose key has an override (it answers at once), once doing nothing
 * and once making 50 small tables, so the difference is what Redis's Lua charges for memory a
 * call makes (garbage collection). Takes a few minutes (valgrind).
 */
import { createHash } from 'node:crypto';
import { fixedWindow } from '@floodgate/core';
import { Redis } from 'ioredis';
import { type CommandSubject, callgrindAvailable, instructionsPerCall } from './callgrind.js';
import { batchScriptFor, liveScriptFor, scriptFor } from './engine-scripts.js';
import { readLiveStorage } from './live-setup.js';
import { NEVER_DENY } from './subjects.js';

const BATCH = 32;
const policies = () => [fixedWindow({ limit: NEVER_DENY, window: '1h', name: 'hour' })];

/** An override's stored value and each caller's keys, as the store writes them. */
const storedOverride = () =>
  readLiveStorage(policies(), async (limiter, client) => {
    await limiter.setLimit('x', { policy: 'hour', limit: NEVER_DENY + 1 });
    const override = (await client.get(limiter.storageKeys('x').at(-1)!))!;
    const keys = Array.from({ length: BATCH }, (_, i) => limiter.storageKeys(`k${i}`));
    return { override, keys };
  });

async function main() {
  if (!(await callgrindAvailable())) throw new Error('valgrind (callgrind) is not installed');
  const { override, keys } = await storedOverride();
  const kinds = policies().map((p) => p.kind);
  const plain = batchScriptFor(scriptFor(kinds));
  const liveSingle = liveScriptFor(kinds);
  const live = batchScriptFor(liveSingle);
  const groups = policies().flatMap((p) => [p.kind, ...p.params.map(String)]);
  const args = ['0', '', '1', '0', ...groups, ''];
  const all = keys.flat();
  const command = (script: { sha1: string }, a: string[]) => [
    'EVALSHA',
    script.sha1,
    String(all.length),
    ...all,
    '1',
    String(keys[0]!.length),
    String(a.length),
    ...a,
  ];
  // The live script with its live part (decide_live) answering at once, after `work`.
  const answering = (work: string) => {
    const at = 'local BEFORE = OUTN';
    if (!live.source.includes(at)) throw new Error(`the live batch script has no "${at}"`);
    const source = live.source.replace(
      at,
      `do ARGV[#ARGV] = nil; ARGV[#ARGV] = nil; ${work} return 1 end`,
    );
    return { source, sha1: createHash('sha1').update(source).digest('hex') };
  };
  const empty = answering('');
  const tables = answering('local t = {}; for i = 1, 50 do t[i] = { i } end;');
  const overridden = (calls: number[]) => async (client: Redis) => {
    for (const i of calls) await client.set(keys[i]!.at(-1)!, override);
  };
  const liveArgs = [...args, '', ''];
  const subjects: CommandSubject[] = [
    {
      name: 'off: no live limits',
      script: plain.source,
      command: command(plain, args),
      perCall: BATCH,
      // Every row runs with the same scripts loaded: Redis's Lua garbage collector walks them all.
      setup: async (client: Redis) => {
        for (const s of [live, liveSingle, empty, tables]) await client.script('LOAD', s.source);
      },
    },
    {
      name: 'on: no override',
      script: live.source,
      command: command(live, liveArgs),
      perCall: BATCH,
    },
    ...(
      [
        ['on: one call with an override', [16]],
        ['on: three', [8, 16, 24]],
        ['on: every call', keys.map((_, i) => i)],
      ] as const
    ).map(([name, calls]) => ({
      name,
      script: live.source,
      command: command(live, liveArgs),
      perCall: BATCH,
      setup: overridden([...calls]),
    })),
    {
      name: 'one, its live part answering at once',
      script: empty.source,
      command: command(empty, liveArgs),
      perCall: BATCH,
      setup: overridden([16]),
    },
    {
      name: 'one, its live part making 50 tables, then answering',
      script: tables.source,
      command: command(tables, liveArgs),
      perCall: BATCH,
      setup: overridden([16]),
    },
  ];
  const rows = await instructionsPerCall(subjects, Number(process.env.BENCH_CALLS ?? 6_400));
  const base = rows[0]!.instructionsPerCall * BATCH;
  const lines = [
    '| batch of 32 fixedWindow consumes | instructions per batch | − off |',
    '|---|---|---|',
  ];
  for (const r of rows) {
    const batch = r.instructionsPerCall * BATCH;
    lines.push(
      `| ${r.subject} | ${batch.toLocaleString('en-US')} | ${(batch - base).toLocaleString('en-US')} |`,
    );
  }
  console.log(lines.join('\n'));
}

await main();
