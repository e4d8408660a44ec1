/**
 * Storage keys: `<prefix>:{<key>}:<policy id>`. The caller's key becomes the Redis Cluster hash
 * tag, so every key of one decision lands in one slot; it is encoded so that it can neither end
 * the tag early nor collide with another key.
 */
import { createHash } from 'node:crypto';
import { ALGORITHMS } from './algorithms/index.js';
import { describeValue, RateLimitArgumentError } from './errors.js';
import { blockId, type Policy, stateId } from './policy.js';

/** Keys longer than this (UTF-16 code units) are replaced by a digest. */
export const MAX_RAW_KEY_LENGTH = 256;

const NEEDS_ESCAPE = /[%}]/;
/** A lone UTF-16 surrogate: in Unicode mode a well-formed pair is one code point, never matched. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The text placed inside `{…}`: the key itself when it holds no `}` or `%` and is short;
 * otherwise `%` and `}` are percent-escaped, and long keys become `%H` + SHA-256 (no escaped
 * key can start with `%H`, so the mapping stays one-to-one). Keys that are not well-formed UTF-16
 * are refused (RateLimitArgumentError): they have no lossless UTF-8 form.
 */
export function encodeKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new RateLimitArgumentError(
      'key',
      key,
      `key must be a non-empty string, got ${describeValue(key)}`,
    );
  }
  if (key.length === 0)
    throw new RateLimitArgumentError('key', key, 'key must be a non-empty string, got ""');
  // Redis (and SHA-256 over UTF-8) would turn every lone surrogate into U+FFFD, so distinct keys
  // would share a counter there while the memory store kept them apart: refuse them instead.
  if (LONE_SURROGATE.test(key)) {
    throw new RateLimitArgumentError(
      'key',
      key,
      'key must be well-formed UTF-16 (it holds a lone surrogate, e.g. half of an emoji cut by slice())',
    );
  }
  if (key.length > MAX_RAW_KEY_LENGTH) {
    return `%H${createHash('sha256').update(key, 'utf8').digest('base64url')}`;
  }
  if (!NEEDS_ESCAPE.test(key)) return key;
  return key.replace(/%/g, '%25').replace(/\}/g, '%7D');
}

/**
 * Whether redisStore keeps these policies' states in one key per caller: two or more
 * policies whose states are all strings at their base keys, as each algorithm's twin declares
 * (`sharesKey`: not slidingLog's sorted set, nor fixedWindow's per-window keys or
 * its extendWindow layouts, which write on a denial).
 */
export function sharesOneKey(policies: readonly Policy[]): boolean {
  return (
    policies.length > 1 &&
    policies.every((p) => ALGORITHMS[p.kind]?.sharesKey?.(p.params) !== false)
  );
}

/**
 * What follows `<prefix>:{<encoded key>` in each of a limiter's storage keys: `}:<policy id>` per
 * policy, or `}:<state id>` for all of them when the store keeps them in one key (`combined`),
 * then `}:<block id>`, the key's block state.
 */
export function keyTails(policies: readonly Policy[], combined: boolean): string[] {
  const block = `}:${blockId(policies)}`;
  if (combined) return [`}:${stateId(policies)}`, block];
  return [...policies.map((p) => `}:${p.id}`), block];
}
