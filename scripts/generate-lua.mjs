#!/usr/bin/env node
// Builds packages/core/src/generated/scripts.ts from lua/: one script per algorithm (used when
// every policy of a limiter is of that kind) and one `engine` script with every algorithm
// (used for mixed limiters). Each script is include/prelude.lua + the shared steps its
// algorithms include (`--- @include "<name>"`) + algorithm file(s) + include/blocks.lua +
// include/engine.lua, so shared parts exist once. Each also gets a batch variant (BATCH_SCRIPTS)
// that decides several calls in one EVALSHA: the same parts, the engine wrapped in a function,
// and include/batch.lua, which runs it once per call. Scripts of several algorithms whose states
// are strings also get a combined variant (COMBINED_SCRIPTS, and its batch variant), which keeps
// every policy's state in one key per caller (scripts/lua-combined.mjs, include/combined.lua).
// `--check` fails when the file is stale.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { combinedVariant } from './lua-combined.mjs';
import { expandInline, takeInline } from './lua-inline.mjs';
import { batchReply, singleEngine, splitEngine, unrollEngine, unrollState } from './lua-unroll.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const luaDir = join(root, 'lua');
const out = join(root, 'packages/core/src/generated/scripts.ts');

const read = (file) => readFileSync(join(luaDir, file), 'utf8').trimEnd();
// include/prelude.lua defines `local function read_call() … end`, which reads one call's ARGV.
// A batch script calls it once per decision; a single-call script runs its body inline instead
// (as the prelude's last statements), so no closure is made for it on every EVALSHA.
const READ_CALL = /^local function read_call\(\)\n([\s\S]*?)^end$/m;
const batchPrelude = read('include/prelude.lua');
if (!READ_CALL.test(batchPrelude)) {
  throw new Error('lua/include/prelude.lua must define `local function read_call()` … `end`');
}
const prelude = batchPrelude.replace(READ_CALL, (_, body) => body.replace(/^ {2}/gm, '').trimEnd());
// The engine with its paths for two to four policies written out (scripts/lua-unroll.mjs).
const engineSource = read('include/engine.lua');
// Its two parts (scripts/lua-unroll.mjs splitEngine): a single script runs them one after the
// other, a batch script defines the first once and runs the second per call.
const engineParts = splitEngine(unrollEngine(engineSource, (i) => `KEYS[${i}]`));
const engine = singleEngine(engineParts);
// The engine's steps on algorithms and blocks: before the engine, outside a batch's per-call
// function. Its `--- @engine-state` line starts what a batch script makes in make_engine().
const ENGINE_STATE = /^--- @engine-state\n/m;
const blocksText = unrollState(read('include/blocks.lua'));
const stateAt = blocksText.search(ENGINE_STATE);
if (stateAt < 0)
  throw new Error('lua/include/blocks.lua no longer holds a `--- @engine-state` line');
const blocks = blocksText.replace(ENGINE_STATE, '');
const batchBlocks = blocksText.slice(0, stateAt).trimEnd();
const engineState = blocksText.slice(stateAt).replace(ENGINE_STATE, '').trim();
const batch = read('include/batch.lua');
// A batch script's algorithms and engine read the KEYS and ARGV of the call being decided:
// these locals, which include/batch.lua points at each call's own.
const BATCH_HEADER =
  '-- Floodgate batch script (include/batch.lua says how it runs).\nlocal BATCH_KEYS, BATCH_ARGV = KEYS, ARGV\nlocal KEYS, ARGV, NUMS, OUT, OUTN, LONE\n' +
  '-- Read on every decision: an upvalue costs less than a global (forBatch: redis_pcall).\n' +
  'local tonumber, redis_pcall = tonumber, redis.pcall';
// include/batch.lua runs read_call() once per shape of calls, before decide().
// Its decisions' replies go into the batch's own (OUT, include/batch.lua; scripts/lua-unroll.mjs).
// The engine is made by make_engine(), which include/batch.lua runs for the first call of a batch
// that needs it: its state (blocks.lua after `--- @engine-state`), decide_several and decide(),
// the per-call part. Defined at the script's top they would be closures and upvalue objects made
// on every EVALSHA (~500 instructions per decision in a fixedWindow batch of 32 that never uses
// them, ~1 000 in a gcra one: docs/benchmarks.md "Deciders per shape").
const BATCH_ENGINE = `local decide
local function make_engine()
${engineState}

${batchReply(engineParts.defined)}

return function()
${engineParts.perCall}
end
end`;
// The combined variant of multi-policy scripts (one key per caller): scripts/lua-combined.mjs.
const combined = combinedVariant(engineSource, blocks, read('include/combined.lua'));
// In a batch script the algorithms read their numbers from NUMS, parsed once per shape of calls
// (include/batch.lua), where a single script parses each one on every call (a tonumber() costs
// Redis about as much as a GET).
// The same for redis.pcall (fixedWindow's INCRBY on every lone decision), read from a local the
// batch header makes (BATCH_HEADER): ~400 instructions a batched fixedWindow decision with tonumber.
const forBatch = (text) =>
  text.replaceAll('tonumber(ARGV[', '(NUMS[').replaceAll('redis.pcall(', 'redis_pcall(');
// Every algorithm file ends with `register('<name>', check, commit, clear|nil, refund, nargs[,
// lone])`. That line is not Lua the script runs: it is replaced here, so that no table or closure
// is made on each call to bind an algorithm (a script body runs on every EVALSHA).
//   one-algorithm script: local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = check, commit, clear, refund, nargs, nil
//                         and in its batch variant also `LONE = lone` (BATCH_HEADER declares it)
//   mixed script:         ALG['<name>'] = { check, commit, clear, refund, nargs }, between
//                         `local ALG = {}` and `local CHECK, COMMIT, CLEAR, REFUND, NARGS` (all nil)
// lone (optional) makes a batch's decider for a shape of lone consumes (include/batch.lua). It is
// defined between the lines `--- @batch` and `--- @end batch`, which only a one-algorithm batch
// script keeps: any other script would pay its closure on every EVALSHA and never call it (a
// mixed script's limiters have several policies, never a lone consume).
const REGISTER = /^register\('([a-z-]+)', (\w+), (\w+), (\w+), (\w+), (\d+)(?:, (\w+))?\)$/m;
const BATCH_ONLY = /^--- @batch\n([\s\S]*?)^--- @end batch\n/m;
const MIXED_HEADER = 'local ALG = {}';
const MIXED_FOOTER = 'local CHECK, COMMIT, CLEAR, REFUND, NARGS';
// Shared steps of several algorithms (lua/include/<name>.lua) come in as BullMQ's do: a line
// `--- @include "<name>"` in an algorithm file. The line is dropped there and the step is put
// once, before every algorithm of the script, in each script whose algorithms ask for it (a
// `local function` costs Redis a closure on every call, so no script defines steps it never uses).
// A step marked `--- @inline` is not defined but written out where it is called
// (scripts/lua-inline.mjs); an include that holds nothing else is put in no script.
const INCLUDE = /^--- @include "([a-z-]+)"\n/gm;
const includes = {};
const inline = {};
const algorithms = readdirSync(luaDir)
  .filter((f) => f.endsWith('.lua'))
  .sort()
  .map((file) => {
    const uses = [];
    const steps = new Map();
    let source = read(file).replace(INCLUDE, (_, include) => {
      if (!(include in inline)) {
        const { rest, steps: own } = takeInline(read(`include/${include}.lua`));
        inline[include] = own;
        if (rest.replace(/^--.*$/gm, '').trim() !== '') includes[include] = rest;
      }
      for (const [name, step] of inline[include]) steps.set(name, step);
      if (include in includes) uses.push(include);
      return '';
    });
    source = expandInline(source, steps, file);
    const name = file.slice(0, -'.lua'.length);
    const match = REGISTER.exec(source);
    if (!match || match[1] !== name) {
      throw new Error(
        `lua/${file} must end with register('${name}', check, commit, clear or nil, refund, nargs[, lone]) (the file name is the algorithm name)`,
      );
    }
    const [line, , check, commit, clear, refund, nargs, lone] = match;
    const single = source.replace(BATCH_ONLY, '');
    const inBatch = source.replace(BATCH_ONLY, '$1');
    if ((single !== source) !== (lone !== undefined))
      throw new Error(
        `lua/${file}: a lone decider is registered and defined under --- @batch, or neither`,
      );
    const solo = `local CHECK, COMMIT, CLEAR, REFUND, NARGS, ALG = ${check}, ${commit}, ${clear}, ${refund}, ${nargs}, nil`;
    return {
      name,
      uses,
      solo: single.replace(line, solo),
      mixed: single.replace(
        line,
        `ALG['${name}'] = { ${check}, ${commit}, ${clear}, ${refund}, ${nargs} }`,
      ),
      soloBatch: inBatch.replace(line, lone ? `${solo}\nLONE = ${lone}` : solo),
    };
  });

const join2 = (parts) => `${parts.join('\n\n')}\n`;
// The shared steps these algorithms use, each once, in name order (stores/scripts.ts does the same).
const stepsFor = (list) => [...new Set(list.flatMap((a) => a.uses))].sort().map((i) => includes[i]);
// parts: a single script's; batchParts (one algorithm): its batch variant's, `--- @batch` lines kept.
const bodies = [
  ...algorithms.map((a) => ({
    name: a.name,
    algorithms: [a.name],
    parts: [...stepsFor([a]), a.solo],
    batchParts: [...stepsFor([a]), a.soloBatch],
  })),
  {
    name: 'engine',
    algorithms: algorithms.map((a) => a.name),
    parts: [...stepsFor(algorithms), MIXED_HEADER, ...algorithms.map((a) => a.mixed), MIXED_FOOTER],
  },
];
const scripts = bodies.map((b) => ({
  name: b.name,
  algorithms: b.algorithms,
  source: join2([prelude, ...b.parts, blocks, engine]),
}));
const batchScripts = bodies.map((b) => ({
  name: `${b.name}-batch`,
  algorithms: b.algorithms,
  source: join2([
    BATCH_HEADER,
    batchPrelude,
    ...(b.batchParts ?? b.parts).map(forBatch),
    batchBlocks,
    BATCH_ENGINE,
    batch,
  ]),
}));

const { bodies: combinedBodies, scripts: combinedScripts } = combined.scripts(bodies, {
  join2,
  prelude,
  batchPrelude,
  batchHeader: BATCH_HEADER,
  batch,
  forBatch,
});

let text = `// Generated by scripts/generate-lua.mjs from lua/ — do not edit; run \`pnpm generate\`.
/* eslint-disable */

/** A Redis script built from lua/: its exact text and the SHA1 that SCRIPT LOAD returns for it. */
export interface GeneratedScript {
  readonly name: string;
  readonly sha1: string;
  /** Algorithms the script can run (ARGV names them per policy). */
  readonly algorithms: readonly string[];
  /** KEYS per policy: the script takes one base key for each policy of the limiter. */
  readonly keysPerPolicy: 1;
  /**
   * The combined layout (lua/include/combined.lua): KEYS are the caller's one state key and its
   * block key, whatever the number of policies.
   */
  readonly combined?: true;
  readonly source: string;
}

`;
for (const s of [...scripts, ...batchScripts, ...combinedScripts]) {
  const sha1 = createHash('sha1').update(s.source).digest('hex');
  text += `export const ${constName(s.name)}: GeneratedScript = {
  name: ${JSON.stringify(s.name)},
  sha1: ${JSON.stringify(sha1)},
  algorithms: ${JSON.stringify(s.algorithms)},
  keysPerPolicy: 1,${s.combined ? '\n  combined: true,' : ''}
  source: ${JSON.stringify(s.source)},
};

`;
}
text += `/** Every generated script by name: one per algorithm, plus \`engine\` with all of them. */
export const SCRIPTS: Readonly<Record<string, GeneratedScript>> = {
${scripts.map((s) => `  ${JSON.stringify(s.name)}: ${constName(s.name)},`).join('\n')}
};

/**
 * The combined variant (lua/include/combined.lua) of every one-algorithm script whose state is a
 * string, by algorithm: for limiters of several policies of that algorithm.
 */
export const COMBINED_SCRIPTS: Readonly<Record<string, GeneratedScript>> = {
${combinedBodies.map((b) => `  ${JSON.stringify(b.algorithms[0])}: ${constName(b.name)},`).join('\n')}
};

/** The batch variant of every script in SCRIPTS and COMBINED_SCRIPTS, by its name (include/batch.lua). */
export const BATCH_SCRIPTS: Readonly<Record<string, GeneratedScript>> = {
${[...bodies, ...combinedBodies].map((b) => `  ${JSON.stringify(b.name)}: ${constName(`${b.name}-batch`)},`).join('\n')}
};

/**
 * The parts of a script for limiters that mix some of the algorithms: prelude, the steps those
 * algorithms use, mixedHeader, those algorithms (in name order), mixedFooter, blocks and engine,
 * joined by blank lines (\`engine\` above is all of them); its batch variant is batchHeader,
 * batchPrelude, the steps, mixedHeader, those batchAlgorithms, mixedFooter, batchBlocks, batchEngine
 * and batch.
 */
export const SCRIPT_PARTS = {
  prelude: ${JSON.stringify(prelude)},
  mixedHeader: ${JSON.stringify(MIXED_HEADER)},
  mixedFooter: ${JSON.stringify(MIXED_FOOTER)},
  blocks: ${JSON.stringify(blocks)},
  /** A batch script's blocks part: without the engine state, which batchEngine makes when needed. */
  batchBlocks: ${JSON.stringify(batchBlocks)},
  engine: ${JSON.stringify(engine)},
  batchHeader: ${JSON.stringify(BATCH_HEADER)},
  batchPrelude: ${JSON.stringify(batchPrelude)},
  batchEngine: ${JSON.stringify(BATCH_ENGINE)},
  batch: ${JSON.stringify(batch)},
  algorithms: {
${algorithms.map((a) => `    ${JSON.stringify(a.name)}: ${JSON.stringify(a.mixed)},`).join('\n')}
  } as Readonly<Record<string, string>>,
  /** The algorithms as a batch script holds them (reading NUMS[i] for tonumber(ARGV[i])). */
  batchAlgorithms: {
${algorithms.map((a) => `    ${JSON.stringify(a.name)}: ${JSON.stringify(forBatch(a.mixed))},`).join('\n')}
  } as Readonly<Record<string, string>>,
${combined.partsText(algorithms, includes, forBatch)}
  /** Shared steps (lua/include/<name>.lua that an algorithm asks for with \`--- @include\`). */
  steps: {
${Object.keys(includes)
  .sort()
  .map((i) => `    ${JSON.stringify(i)}: ${JSON.stringify(includes[i])},`)
  .join('\n')}
  } as Readonly<Record<string, string>>,
  /** The shared steps each algorithm uses; a script holds each step once, in name order, first. */
  uses: {
${algorithms.map((a) => `    ${JSON.stringify(a.name)}: ${JSON.stringify(a.uses)},`).join('\n')}
  } as Readonly<Record<string, readonly string[]>>,
} as const;
`;

// Standalone scripts that are not algorithm policies (ConcurrencyLimiter's leases): one per
// lua/leases/<name>.lua, each include/prelude.lua + that file, appended after SCRIPTS.
const leasesDir = join(luaDir, 'leases');
const leases = existsSync(leasesDir)
  ? readdirSync(leasesDir)
      .filter((f) => f.endsWith('.lua'))
      .sort()
      .map((file) => ({
        name: `lease-${file.slice(0, -'.lua'.length)}`,
        source: `${[prelude, read(`leases/${file}`)].join('\n\n')}\n`,
      }))
  : [];
if (leases.length > 0) {
  text += `
/** A standalone script built from lua/leases/ (not a policy): its text and SCRIPT LOAD SHA1. */
export interface LeaseScript {
  readonly name: string;
  readonly sha1: string;
  readonly source: string;
}

`;
  for (const s of leases) {
    const sha1 = createHash('sha1').update(s.source).digest('hex');
    text += `export const ${constName(s.name)}: LeaseScript = {
  name: ${JSON.stringify(s.name)},
  sha1: ${JSON.stringify(sha1)},
  source: ${JSON.stringify(s.source)},
};

`;
  }
  text += `/** ConcurrencyLimiter's lease scripts by name. */
export const LEASE_SCRIPTS: Readonly<Record<string, LeaseScript>> = {
${leases.map((s) => `  ${JSON.stringify(s.name)}: ${constName(s.name)},`).join('\n')}
};
`;
}

function constName(name) {
  return `${name.replace(/-/g, '_').toUpperCase()}_SCRIPT`;
}

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(out, 'utf8');
  } catch {}
  if (current !== text) {
    console.error(
      'packages/core/src/generated/scripts.ts is stale: run `pnpm generate` and commit it.',
    );
    process.exit(1);
  }
  console.log(`generated scripts are up to date (${scripts.length} scripts)`);
} else {
  writeFileSync(out, text);
  console.log(`wrote ${out.slice(root.length + 1)} (${scripts.length} scripts)`);
}
