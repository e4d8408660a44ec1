/**
 * `redisStore({ client, scripts: 'functions' })`: every script runs as a Redis Function (Redis
 * 7.0+, Valkey) instead of by EVALSHA, for servers and proxies that answer NOSCRIPT now and
 * then although the script was just loaded (some managed and serverless offerings): a function
 * stays loaded until FUNCTION DELETE or FLUSH, and is copied to replicas and kept in RDB/AOF.
 *
 * Each assembled script (scripts.ts) becomes a library of its own, named by the script's SHA1
 * (`floodgate_<sha1>`, one function of the same name): the same name always holds the same code,
 * so two Floodgate versions, or two limiters with different algorithms, never replace each
 * other's functions, and `FUNCTION LOAD REPLACE` only ever replaces a library by itself.
 *
 * The store keeps its EVALSHA logic and runs it through `functionsClient`, which turns the
 * client's calls into functions: `evalsha` sends FCALL and answers "function not found" as
 * NOSCRIPT (FunctionNotLoadedError); `eval`, which the store sends after a NOSCRIPT, loads the
 * library on every primary and sends the FCALL again, once. An FCALL of a missing function
 * runs nothing, so that re-send never charges twice.
 */
import { createHash } from 'node:crypto';
import { RateLimitConfigError } from '../errors.js';
import { FunctionNotLoadedError, isFunctionNotFound } from './redis-errors.js';
import type { ScriptClient } from './script-client.js';

/** What every Floodgate library and function name starts with (`FUNCTION LIST LIBRARYNAME`). */
export const FUNCTION_PREFIX = 'floodgate_';

/** The library (and function) name of the script whose SHA1 is `sha1`. */
export function functionName(sha1: string): string {
  return `${FUNCTION_PREFIX}${sha1}`;
}

/**
 * Lines a library puts before the script's first line: a function error's `user_function:<n>`
 * is line `n - LIBRARY_HEAD_LINES` of the script.
 */
export const LIBRARY_HEAD_LINES = 2;

/**
 * The library that registers `source` (an assembled script, whose SHA1 is `sha1`) as a function.
 * A function receives its keys and arguments as parameters where a script reads the globals
 * KEYS and ARGV, so the script's text becomes the body of a function whose parameters have those
 * names: not one of its lines changes. Its state lives in locals of that body (blocks.lua's
 * VALUES and PLANNED caches, the batch loop's tables), made anew on every call, as in a script.
 * No flags: every script may write (`no-writes` would refuse them), and a full Redis refuses the
 * call before it runs.
 */
export function functionLibrary(source: string, sha1: string): string {
  const name = functionName(sha1);
  return [
    `#!lua name=${name}`,
    'local function run(KEYS, ARGV)',
    `${source.trimEnd()}`,
    'end',
    `redis.register_function('${name}', run)`,
    '',
  ].join('\n');
}

/**
 * The store's client in `scripts: 'functions'` mode: `evalsha` sends FCALL, `eval` loads the
 * library on every primary first (see the file's comment); everything else goes to `client`.
 */
export function functionsClient(client: ScriptClient, field = 'redisStore.scripts'): ScriptClient {
  const { fcall, everyPrimary } = client;
  if (fcall === undefined || everyPrimary === undefined) {
    throw new RateLimitConfigError(
      'FLOODGATE_INVALID_OPTION',
      field,
      'functions',
      `${field} is 'functions', but ${client.description} cannot send FCALL through this store: use the default, scripts: 'evalsha'`,
    );
  }
  // One load per library at a time: the calls that found it missing together wait for the same.
  const loading = new Map<string, Promise<unknown>>();
  const load = (source: string): Promise<string> => {
    const sha1 = createHash('sha1').update(source).digest('hex');
    let pending = loading.get(sha1);
    if (pending === undefined) {
      pending = everyPrimary
        .call(client, ['FUNCTION', 'LOAD', 'REPLACE', functionLibrary(source, sha1)])
        .finally(() => loading.delete(sha1));
      loading.set(sha1, pending);
    }
    return pending.then(() => functionName(sha1));
  };
  return {
    ...client,
    description: client.description,
    evalsha: (sha1, keys, args, ticket) =>
      fcall.call(client, functionName(sha1), keys, args, ticket).catch((error: unknown) => {
        throw isFunctionNotFound(error)
          ? new FunctionNotLoadedError(String((error as Error).message), { cause: error })
          : error;
      }),
    eval: (source, keys, args, ticket) =>
      load(source).then((name) => fcall.call(client, name, keys, args, ticket)),
  };
}
