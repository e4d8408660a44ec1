/** Reading `redisStore({ batch })`, and the size a batch's byte bound counts. */
import { configError, optionNames, positiveInteger, readOptions } from '../options.js';
import type { RedisStoreOptions } from './redis.js';
import { type BatchLimits, DEFAULT_BATCH_LIMITS } from './redis-batch.js';

/** Every option name of `batch` as an object, checked against the type. */
const BATCH_OPTION_NAMES = optionNames<Exclude<RedisStoreOptions['batch'], boolean | undefined>>({
  maxDecisions: true,
  maxBytes: true,
});

/** Characters in `strings` (a batch's size bound counts keys and arguments this way). */
export function size(strings: readonly string[]): number {
  let n = 0;
  for (const s of strings) n += s.length + 1;
  return n;
}

export function readBatch(value: unknown): BatchLimits | undefined {
  if (value === undefined || value === true) return DEFAULT_BATCH_LIMITS;
  if (value === false) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError('redisStore.batch', value, 'true, false or { maxDecisions?, maxBytes? }');
  }
  const o = readOptions(value, 'redisStore.batch', BATCH_OPTION_NAMES);
  return Object.freeze({
    maxDecisions:
      o.maxDecisions === undefined
        ? DEFAULT_BATCH_LIMITS.maxDecisions
        : positiveInteger(o.maxDecisions, 'redisStore.batch.maxDecisions'),
    maxBytes:
      o.maxBytes === undefined
        ? DEFAULT_BATCH_LIMITS.maxBytes
        : positiveInteger(o.maxBytes, 'redisStore.batch.maxBytes'),
  });
}
