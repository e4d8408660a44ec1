/**
 * Which script runs a limiter's policies: the generated one of their algorithm when they share
 * one, the full engine when they use every algorithm, and otherwise a script made of just the
 * algorithms they use. Every algorithm in a script is set up on each call, so the full engine
 * costs a two-kind limiter ~13 % more Redis work than its own script (docs/benchmarks.md).
 */
import { createHash } from 'node:crypto';
import {
  BATCH_SCRIPTS,
  COMBINED_SCRIPTS,
  ENGINE_SCRIPT,
  type GeneratedScript,
  SCRIPT_PARTS,
  SCRIPTS,
} from '../generated/scripts.js';

const composed = new Map<string, GeneratedScript>();
const composedBatches = new Map<string, GeneratedScript>();

/** The script for these algorithm kinds (any order, repeats allowed); all must be known. */
export function scriptFor(kinds: Iterable<string>): GeneratedScript {
  const names = [...new Set(kinds)].sort();
  if (names.length === 1) return SCRIPTS[names[0]!]!;
  if (names.length === ENGINE_SCRIPT.algorithms.length) return ENGINE_SCRIPT;
  const name = names.join('+');
  let script = composed.get(name);
  if (script === undefined) {
    // The same text the generator makes for `engine`, with only these algorithms.
    const parts = [
      SCRIPT_PARTS.prelude,
      ...stepsFor(names),
      SCRIPT_PARTS.mixedHeader,
      ...names.map((n) => SCRIPT_PARTS.algorithms[n]!),
      SCRIPT_PARTS.mixedFooter,
      SCRIPT_PARTS.blocks,
      SCRIPT_PARTS.engine,
    ];
    script = frozenScript(name, names, parts);
    composed.set(name, script);
  }
  return script;
}

/**
 * The combined variant (lua/include/combined.lua) for these algorithm kinds, for a limiter whose
 * policies keep their states in one key (keys.ts `sharesOneKey`): generated for one kind, made
 * from the same parts for a mix.
 */
export function combinedScriptFor(kinds: Iterable<string>): GeneratedScript {
  const names = [...new Set(kinds)].sort();
  if (names.length === 1) return COMBINED_SCRIPTS[names[0]!]!;
  const name = `${names.join('+')}-combined`;
  let script = composed.get(name);
  if (script === undefined) {
    const c = SCRIPT_PARTS.combined;
    const parts = [
      SCRIPT_PARTS.prelude,
      c.part,
      ...stepsFor(names, c.steps),
      SCRIPT_PARTS.mixedHeader,
      ...names.map((n) => c.algorithms[n]!),
      SCRIPT_PARTS.mixedFooter,
      c.blocks,
      c.engine,
    ];
    script = frozenScript(name, names, parts, true);
    composed.set(name, script);
  }
  return script;
}

/** The batch variant of a script `scriptFor` or `combinedScriptFor` answered (lua/include/batch.lua). */
export function batchScriptFor(script: GeneratedScript): GeneratedScript {
  const generated = BATCH_SCRIPTS[script.name];
  if (generated !== undefined) return generated;
  let batch = composedBatches.get(script.name);
  if (batch === undefined) {
    // The same text the generator makes for `engine-batch`, with only these algorithms.
    const c = script.combined ? SCRIPT_PARTS.combined : undefined;
    const parts = [
      SCRIPT_PARTS.batchHeader,
      SCRIPT_PARTS.batchPrelude,
      ...(c ? [c.part] : []),
      ...stepsFor(script.algorithms, c?.steps),
      SCRIPT_PARTS.mixedHeader,
      ...script.algorithms.map((n) => (c ?? SCRIPT_PARTS).batchAlgorithms[n]!),
      SCRIPT_PARTS.mixedFooter,
      c ? c.blocks : SCRIPT_PARTS.batchBlocks,
      c ? c.batchEngine : SCRIPT_PARTS.batchEngine,
      SCRIPT_PARTS.batch,
    ];
    batch = frozenScript(`${script.name}-batch`, script.algorithms, parts, script.combined);
    composedBatches.set(script.name, batch);
  }
  return batch;
}

/** The shared Lua steps (`--- @include`) these algorithms use, each once, in name order. */
function stepsFor(
  algorithms: readonly string[],
  texts: Readonly<Record<string, string>> = SCRIPT_PARTS.steps,
): string[] {
  const steps = new Set(algorithms.flatMap((a) => SCRIPT_PARTS.uses[a] ?? []));
  return [...steps].sort().map((s) => texts[s]!);
}

function frozenScript(
  name: string,
  algorithms: readonly string[],
  parts: readonly string[],
  combined?: true,
): GeneratedScript {
  const source = `${parts.join('\n\n')}\n`;
  return Object.freeze({
    name,
    sha1: createHash('sha1').update(source).digest('hex'),
    algorithms,
    keysPerPolicy: 1 as const,
    ...(combined ? { combined } : {}),
    source,
  });
}
