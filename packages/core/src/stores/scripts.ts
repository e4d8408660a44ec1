/**
 * Which script runs a limiter's policies, assembled from lua/ the first time a limiter needs it
 * (lua/assemble.cjs, the same assembler `pnpm generate` runs): the script of their algorithm
 * when they share one, `engine` when they use every algorithm, and otherwise a script of just the
 * algorithms they use (every algorithm in a script is set up on each call, so the full engine
 * costs a two-kind limiter ~13 % more Redis work than its own script: docs/benchmarks.md).
 *
 * The package carries lua/ with its comments' text removed (dist/lua/sources); in the repository
 * the store reads lua/ itself and removes the comments' text as it reads, so both send the same
 * script under the same SHA1 (pinned in lua/scripts.sha1).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AssembledScript,
  type Assembler,
  createAssembler,
  fixedScripts as fixedScriptsOf,
  type SourceLine,
  stripComments,
} from '../lua/assemble.cjs';
import { LIBRARY_HEAD_LINES } from './redis-functions.js';

/** A Redis script assembled from lua/: its exact text and the SHA1 that SCRIPT LOAD returns. */
export type GeneratedScript = AssembledScript;
export type { SourceLine };

let assembler: Assembler | undefined;

/**
 * The first of these folders that holds lua/'s files: the package's dist/lua/sources (from the
 * bundle in dist/chunks/ or dist/), or the repository's lua/ when the sources run from src/. A bundler that inlined the package leaves
 * neither beside the code: said at startup, not as a store error on every decision.
 */
export function findLuaSources(
  candidates = [
    join(__dirname, '../lua/sources'),
    join(__dirname, 'lua/sources'),
    join(__dirname, '../../../../lua'),
  ],
): string {
  const found = candidates.find((dir) => existsSync(join(dir, 'include/prelude.lua')));
  if (found === undefined) {
    throw new Error(
      `@floodgate/core cannot find its Lua scripts (looked in ${candidates.join(', ')}): the Redis store reads them from the package's dist/lua/ at run time, so a bundle must keep @floodgate/core as an external dependency`,
    );
  }
  return found;
}

/** The assembler over the lua/ this copy of the package carries, made on first use. */
function scripts(): Assembler {
  if (assembler === undefined) {
    const dir = findLuaSources();
    assembler = createAssembler({
      read: (path) => stripComments(readFileSync(join(dir, path), 'utf8')),
      list: (sub) =>
        readdirSync(join(dir, sub), { withFileTypes: true })
          .filter((e) => e.isFile() && e.name.endsWith('.lua'))
          .map((e) => e.name)
          .sort(),
    });
  }
  return assembler;
}

/** Every algorithm kind lua/ holds (one `lua/<kind>.lua` each). */
export function algorithmKinds(): readonly string[] {
  return scripts().kinds();
}

/** Every script lua/scripts.sha1 pins, as this store sends it (assemble.cjs `fixedScripts`). */
export function fixedScripts(): GeneratedScript[] {
  return fixedScriptsOf(scripts());
}

/** The script for these algorithm kinds (any order, repeats allowed); all must be known. */
export function scriptFor(kinds: Iterable<string>): GeneratedScript {
  return scripts().script(kinds);
}

/**
 * The combined variant (lua/include/combined.lua) for these algorithm kinds, for a limiter whose
 * policies keep their states in one key (keys.ts `sharesOneKey`).
 */
export function combinedScriptFor(kinds: Iterable<string>): GeneratedScript {
  return scripts().script(kinds, { combined: true });
}

/**
 * The live variant of the script for these kinds (lua/include/live.lua): a single call that reads
 * the key's overrides first, for a limiter with `liveLimits` (one key per policy). Its batch
 * variant decides the calls whose keys have no live state and sends the others back.
 */
export function liveScriptFor(kinds: Iterable<string>): GeneratedScript {
  return scripts().script(kinds, { live: true });
}

/**
 * The batch variant of a script `scriptFor`, `combinedScriptFor` or `liveScriptFor` answered
 * (lua/include/batch.lua).
 */
export function batchScriptFor(script: GeneratedScript): GeneratedScript {
  return scripts().script(script.algorithms, {
    batch: true,
    combined: script.combined === true,
    live: script.live === true,
  });
}

/**
 * The per-node variant of a batch script `batchScriptFor` answered (the store's `batch: 'node'`
 * on a cluster): its keys come in ARGV, checked per slot (lua/include/batch.lua).
 */
export function nodeBatchScriptFor(batchScript: GeneratedScript): GeneratedScript {
  return scripts().script(batchScript.algorithms, {
    batch: true,
    combined: batchScript.combined === true,
    live: batchScript.live === true,
    node: true,
  });
}

/** A lease script of ConcurrencyLimiter (lua/leases/<name>.lua): acquire, release, renew, reset. */
export function leaseScript(name: string): GeneratedScript {
  return scripts().lease(name);
}

/** The clock check's probe (lua/probes/clock.lua): TIME as the store's scripts see it. */
export function clockProbeScript(): GeneratedScript {
  return scripts().clockProbe();
}

/** The compare-and-set of a limiter's record for every key (lua/global/change.lua). */
export function globalChangeScript(): GeneratedScript {
  return scripts().globalChange();
}

/**
 * Where line `line` of a script this store sends comes from (the `<line>` of a Redis error's
 * `user_script:<line>`): its lua/ source file and line.
 */
export function scriptSourceLine(script: GeneratedScript, line: number): SourceLine {
  return scripts().sourceLine(script.source, line);
}

const USER_SCRIPT = /user_script:(\d+)/;
// The same line of a script run as a Redis function (redis-functions.ts): its library puts
// LIBRARY_HEAD_LINES lines before the script's first.
const USER_FUNCTION = /user_function:(\d+)/;
// A message already traced (a batch call's error, wrapped again by the store's own).
const TRACED = /\((?:lua|packages)\/[^()]*:\d+(?:, about)?\)$/;

/**
 * A Redis error message about `script`, with the lua/ file and line that its `user_script:<line>`
 * (`user_function:<line>` when it ran as a function) names appended (`… (lua/gcra.lua:23)`); other messages as they are.
 */
export function withSourceLine(script: GeneratedScript, message: string): string {
  const inScript = USER_SCRIPT.exec(message);
  const inFunction = inScript ? null : USER_FUNCTION.exec(message);
  const found = inScript ?? inFunction;
  if (!found || TRACED.test(message)) return message;
  const line = Number(found[1]) - (inFunction ? LIBRARY_HEAD_LINES : 0);
  const at = scriptSourceLine(script, line);
  return `${message} (${at.file}:${at.line}${at.exact ? '' : ', about'})`;
}
