/**
 * `pnpm --filter @floodgate/bench run instructions`: only the callgrind section, for every
 * algorithm, as a single call and per decision in a batch of 32, plus what one step of the engine
 * costs inside a script (the block-key GET every consume does). Prints a markdown table; the
 * counts are instructions redis-server executes, which do not move with the machine's load, so
 * two runs (before and after a change to lua/) compare exactly. Takes a few minutes (valgrind).
 */
import { createHash } from 'node:crypto';
import * as core from '@floodgate/core';
import { type CommandSubject, callgrindAvailable, instructionsPerCall } from './callgrind.js';
import { batchCommand, scriptCommand } from './commands.js';
import { otherBuild } from './engine-scripts.js';
import { floorSubjects } from './floor.js';
import { NEVER_DENY, threePolicies } from './subjects.js';

const BATCH = 32;
const CALLS = Number(process.env.BENCH_CALLS ?? 6_400);
/** `BENCH_ONLY=fixedWindow,gcra`: only the algorithms whose name starts with one of these. */
const ONLY = process.env.BENCH_ONLY?.split(',');
/**
 * FLOODGATE_CORE_BEFORE=<another checkout's packages/core/.bench-modules/index.js>: each algorithm row is
 * measured with that build's script too, the same command, in the same run (before/after).
 */
const BEFORE = process.env.FLOODGATE_CORE_BEFORE;

/** One policy of every algorithm, set so that nothing is denied during the run. */
const algorithms: [string, core.Policy[]][] = [
  ['fixedWindow', [core.fixedWindow({ limit: NEVER_DENY, window: '1m' })]],
  ['gcra', [core.gcra({ limit: NEVER_DENY, window: '1h' })]],
  ['tokenBucket', [core.tokenBucket({ limit: NEVER_DENY, window: '1h' })]],
  ['leakyBucket', [core.leakyBucket({ limit: NEVER_DENY, window: '1h', burst: 1_000 })]],
  ['slidingWindow', [core.slidingWindow({ limit: NEVER_DENY, window: '1h' })]],
  ['slidingLog', [core.slidingLog({ limit: 1_000, window: '1s' })]],
  ['smoothBursty', [core.smoothBursty({ limit: NEVER_DENY, window: '1s' })]],
  ['smoothWarmingUp', [core.smoothWarmingUp({ limit: NEVER_DENY, window: '1s', warmup: '1s' })]],
  ['3 policies (fixedWindow, fixedWindow, gcra)', threePolicies()],
];

/** A script that does nothing but `body`, on one key: the cost of an engine step in Lua. */
function probe(name: string, body: string) {
  const source = `${body}\nreturn 1\n`;
  const sha1 = createHash('sha1').update(source).digest('hex');
  return { name, script: source, command: ['EVALSHA', sha1, '1', 'bench:{__rand_int__}:bk'] };
}

async function main() {
  if (!(await callgrindAvailable())) throw new Error('valgrind (callgrind) is not installed');
  const before = BEFORE ? await otherBuild(BEFORE) : undefined;
  const subjects = [
    { name: 'INCR', command: ['INCR', 'bench:incr:__rand_int__'] },
    probe('EVALSHA of a script that returns 1', ''),
    probe("the same with the block key's GET (a missing key)", "redis.call('GET', KEYS[1])"),
    // Hand-written scripts with the store's KEYS and ARGV: what a one-policy call costs before
    // the engine does anything of its own (bench/src/floor.ts).
    ...floorSubjects('fixedWindow', algorithms[0]![1][0]!),
    ...floorSubjects('gcra', algorithms[1]![1][0]!),
    ...algorithms
      .filter(([name]) => !ONLY || ONLY.some((o) => name.startsWith(o)))
      .flatMap(([name, policies]) => {
        const single = scriptCommand(policies);
        const batch = batchCommand(policies, BATCH);
        const rows: CommandSubject[] = [
          { name, script: single.script.source, command: single.command },
          {
            name: `${name}, per decision in a batch of ${BATCH}`,
            script: batch.script.source,
            command: batch.command,
            perCall: BATCH,
          },
        ];
        if (!before) return rows;
        // The same commands with the other build's scripts (same KEYS and ARGV: only the SHA1).
        return rows.flatMap((row, i) => {
          const script = before(policies, i === 1);
          const command = ['EVALSHA', script.sha1, ...row.command.slice(2)];
          return [{ ...row, name: `${row.name} (before)`, script: script.source, command }, row];
        });
      }),
  ];
  const rows = await instructionsPerCall(subjects, CALLS);
  const lines = ['| command | instructions per decision |', '|---|---|'];
  for (const r of rows)
    lines.push(`| ${r.subject} | ${r.instructionsPerCall.toLocaleString('en-US')} |`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
