/**
 * `limiter.resetAll()` in the stores. Which storage keys belong to one limiter: keys of the form
 * `<prefix>:{<encoded key>}<tail>` whose tail is one of the limiter's (keys.ts `keyTails`), or a
 * fixedWindow per-window key, the tail plus `:<window index>`. An encoded key never holds `}`,
 * so the first `}` after the head ends the caller's part.
 */
import { RateLimitStoreError } from '../errors.js';
import type { ScriptClient } from './redis-client.js';

/** A predicate that tells whether `key` is one of the limiter's storage keys. */
export function limiterKeyMatcher(
  head: string,
  tails: readonly string[],
): (key: string) => boolean {
  const own = new Set(tails);
  return (key) => {
    if (!key.startsWith(head)) return false;
    const end = key.indexOf('}', head.length);
    if (end < 0) return false;
    const tail = key.slice(end);
    return own.has(tail) || own.has(tail.replace(/:\d+$/, ''));
  };
}

/** `text` as a Redis glob pattern that matches only itself (SCAN MATCH). */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** Drops the entries of `table` that `matches` (memory store: resetAll, sweeps); how many. */
export function dropMatching<E>(
  table: ReadonlyMap<string, E>,
  matches: (key: string, entry: E) => boolean,
  drop: (key: string, entry: E) => void,
): number {
  let dropped = 0;
  for (const [key, entry] of table) {
    if (matches(key, entry)) {
      drop(key, entry);
      dropped++;
    }
  }
  return dropped;
}

/**
 * Keys SCAN asks each node to look at per call in `resetAll`: small enough that no call holds
 * Redis for long (SCAN is O(COUNT) per call), large enough that a keyspace of a million keys
 * takes about a hundred round trips per node.
 */
export const RESET_ALL_SCAN_COUNT = 10_000;

/**
 * `resetAll` on Redis: SCAN every master for `<prefix>:{*`, keep the keys of this limiter
 * (key-match.ts) and UNLINK them, one page at a time. SCAN walks the whole keyspace whatever
 * the pattern, so this is slow on big databases (docs/recipes.md); keys written while it runs
 * may survive it.
 */
export async function deleteLimiterKeys(
  client: ScriptClient,
  head: string,
  tails: readonly string[],
): Promise<number> {
  if (client.scan === undefined) {
    throw new RateLimitStoreError(`${client.description} cannot SCAN: resetAll needs it`);
  }
  const mine = limiterKeyMatcher(head, tails);
  let deleted = 0;
  for await (const page of client.scan(`${escapeGlob(head)}*`, RESET_ALL_SCAN_COUNT)) {
    const keys = page.filter(mine);
    await Promise.all(keys.map((key) => client.command(key, ['UNLINK', key])));
    deleted += keys.length;
  }
  return deleted;
}
