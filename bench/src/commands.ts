/**
 * The raw commands that run our scripts as redisStore sends them, for the sections that send
 * them by hand (the redis-benchmark ceiling and the callgrind instruction counts).
 */
import type { Policy } from '@floodgate/core';
import {
  batchScriptFor,
  combinedScriptFor,
  type EngineScript,
  scriptFor,
  sharesOneKey,
} from './engine-scripts.js';

export interface ScriptCommand {
  script: EngineScript;
  command: string[];
  /** Decisions one command makes (a batch script's calls). */
  perCall?: number;
}

/** Mode, clock ('' = Redis TIME), cost and TTL pad of a consume of cost 1 (lua/include/prelude.lua). */
const CONSUME = ['0', '', '1', '0'];
/** A single call's ARGV: after the policies' groups, one (empty) lockout per policy. */
const callArgs = (policies: readonly Policy[]) => [
  ...CONSUME,
  ...policies.flatMap((p) => [p.kind, ...p.params.map(String)]),
  ...policies.map(() => ''),
];
/**
 * A single call's KEYS on a random caller, as redisStore sends them: the policies' keys (or their
 * one state key, where the store keeps them in one), then the caller's block state.
 */
const callKeys = (policies: readonly Policy[]) => [
  ...(sharesOneKey(policies)
    ? ['bench:{__rand_int__}:st']
    : policies.map((p) => `bench:{__rand_int__}:${p.id}`)),
  'bench:{__rand_int__}:bk',
];
/** The script redisStore runs for these policies. */
const scriptOf = (policies: readonly Policy[]) => {
  const kinds = policies.map((p) => p.kind);
  return sharesOneKey(policies) ? combinedScriptFor(kinds) : scriptFor(kinds);
};

/**
 * One EVALSHA of the single-call script on a random key (`__rand_int__` is redis-benchmark's
 * key randomiser; every occurrence draws its own, so it stands for a caller only within a key
 * name, which is what the cost per decision needs).
 */
export function scriptCommand(policies: readonly Policy[]): ScriptCommand {
  const script = scriptOf(policies);
  const keys = callKeys(policies);
  return {
    script,
    command: ['EVALSHA', script.sha1, String(keys.length), ...keys, ...callArgs(policies)],
  };
}

/**
 * One EVALSHA of the batch script deciding `size` calls on random keys, as redisStore sends it
 * (lua/include/batch.lua): the call's ARGV once as a shape, which every call has (one shape: no
 * shape numbers follow).
 */
export function batchCommand(policies: readonly Policy[], size: number): ScriptCommand {
  const script = batchScriptFor(scriptOf(policies));
  const argv = callArgs(policies);
  const keys = Array.from({ length: size }, () => callKeys(policies));
  return {
    script,
    perCall: size,
    command: [
      'EVALSHA',
      script.sha1,
      String(size * keys[0]!.length),
      ...keys.flat(),
      '1',
      String(keys[0]!.length),
      String(argv.length),
      ...argv,
    ],
  };
}
