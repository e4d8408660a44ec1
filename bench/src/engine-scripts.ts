/**
 * The core's assembled scripts, for the sections that run them by hand (callgrind, memory per
 * key). They are engine internals, not part of @floodgate/core's public entry (whose build is
 * one bundle per entry), so the bench loads them from the core compiled one file per module
 * (packages/core/.bench-modules, written by `scripts/core-modules.mjs` in the bench's build).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Policy } from '@floodgate/core';

export interface EngineScript {
  readonly name: string;
  readonly sha1: string;
  readonly algorithms: readonly string[];
  readonly source: string;
}

interface ScriptsModule {
  scriptFor(kinds: Iterable<string>): EngineScript;
  combinedScriptFor(kinds: Iterable<string>): EngineScript;
  batchScriptFor(script: EngineScript): EngineScript;
  liveScriptFor(kinds: Iterable<string>): EngineScript;
  algorithmKinds(): readonly string[];
}
interface KeysModule {
  sharesOneKey(policies: readonly Policy[]): boolean;
}
interface KeySlotModule {
  crc16Step(crc: number, byte: number): number;
}

const dist = join(
  dirname(createRequire(import.meta.url).resolve('@floodgate/core/package.json')),
  '.bench-modules',
);
const load = async <T>(file: string) => (await import(pathToFileURL(join(dist, file)).href)) as T;

/** The script a limiter with these algorithm kinds runs (core's `scriptFor`). */
/** Its batch variant (core's `batchScriptFor`), which decides many calls in one EVALSHA. */
/** The combined variant (core's `combinedScriptFor`): every policy's state in one key. */
/** The live variant (core's `liveScriptFor`): a limiter with `liveLimits`. */
export const { scriptFor, combinedScriptFor, batchScriptFor, liveScriptFor, algorithmKinds } =
  await load<ScriptsModule>('stores/scripts.js');
/** Whether redisStore keeps these policies in one key per caller (core's `sharesOneKey`). */
export const { sharesOneKey } = await load<KeysModule>('keys.js');
/** One byte into a running CRC16, as Redis Cluster hashes keys to slots (core's `crc16Step`). */
export const { crc16Step } = await load<KeySlotModule>('stores/key-slot.js');
/** The script that runs every algorithm. */
export const ENGINE_SCRIPT = scriptFor(algorithmKinds());

/**
 * The same script choice from another build of core (`<its dist>/index.js`, as
 * FLOODGATE_CORE_BEFORE names it), for before/after rows measured in one run.
 */
export async function otherBuild(index: string) {
  const at = async <T>(file: string) =>
    (await import(pathToFileURL(join(dirname(index), file)).href)) as T;
  const scripts = await at<ScriptsModule>('stores/scripts.js');
  const keys = await at<KeysModule>('keys.js');
  return (policies: readonly Policy[], batch: boolean): EngineScript => {
    const kinds = policies.map((p) => p.kind);
    const script = keys.sharesOneKey(policies)
      ? scripts.combinedScriptFor(kinds)
      : scripts.scriptFor(kinds);
    return batch ? scripts.batchScriptFor(script) : script;
  };
}
