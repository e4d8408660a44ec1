/**
 * Storage keys: `<prefix>:{<key>}:<policy id>`. The caller's key becomes the Redis Cluster hash
 * tag, so every key of one decision lands in one slot; it is encoded so that it can neither end
 * the tag early nor collide with another key.
 */
import { createHash } from 'node:crypto';
import { describeValue, RateLimitArgumentError } from './errors.js';

/** Keys longer than this (UTF-16 code units) are replaced by a digest. */
export const MAX_RAW_KEY_LENGTH = 256;

const NEEDS_ESCAPE = /[%}]/;

/**
 * The text placed inside `{…}`: the key itself when it holds no `}` or `%` and is short;
 * otherwise `%` and `}` are percent-escaped, and long keys become `%H` + SHA-256 (no escaped
 * key can start with `%H`, so the mapping stays one-to-one).
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
  if (key.length > MAX_RAW_KEY_LENGTH) {
    return `%H${createHash('sha256').update(key, 'utf8').digest('base64url')}`;
  }
  if (!NEEDS_ESCAPE.test(key)) return key;
  return key.replace(/%/g, '%25').replace(/\}/g, '%7D');
}
