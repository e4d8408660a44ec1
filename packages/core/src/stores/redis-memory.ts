/**
 * Redis at its memory limit (docs/reliability.md, "Redis memory"). Every limiter key has a TTL,
 * so volatile-* policies evict them as readily as allkeys-* ones, and a client minting keys can
 * then push a victim's counter out, resetting its limit: the store warns once. Under
 * `noeviction` a full Redis refuses writes instead, which the store answers without resetting
 * anyone (redis.ts, `recoverFor`).
 */
import { emitWarning } from '../errors.js';
import type { ScriptClient } from './redis-client.js';
import { redisErrorCode } from './redis-errors.js';

/**
 * Reads `maxmemory` and `maxmemory-policy` (on a cluster, from the node holding `key`) and warns
 * when keys can be evicted. Resolves `true` when it should be tried again (a connection error);
 * a refusal (managed Redis forbids CONFIG, no permission) is final and silent.
 */
export function checkMemoryPolicy(client: ScriptClient, key: string): Promise<boolean> {
  return client.command(key, ['CONFIG', 'GET', 'maxmemory*']).then(
    (reply) => {
      const config = configReply(reply);
      const policy = config['maxmemory-policy'];
      if (Number(config.maxmemory ?? 0) > 0 && policy !== undefined && policy !== 'noeviction') {
        warnEvicting(policy);
      }
      return false;
    },
    // Any error reply (ERR, NOPERM, a proxy's unknown command) is final; no reply is retried.
    (error: unknown) =>
      redisErrorCode(error) === undefined &&
      !/unknown command/i.test(String((error as Error)?.message)),
  );
}

/** CONFIG GET's reply (a flat array, or a map under RESP3) as an object. */
function configReply(reply: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
  } else if (reply !== null && typeof reply === 'object') {
    for (const [name, value] of Object.entries(reply)) out[name] = String(value);
  }
  return out;
}

const warnedPolicies = new Set<string>();
/** Once per process and policy: many stores usually share one Redis. */
function warnEvicting(policy: string): void {
  if (warnedPolicies.has(policy)) return;
  warnedPolicies.add(policy);
  emitWarning(
    'FLOODGATE_EVICTING_MAXMEMORY',
    `Redis maxmemory-policy is '${policy}': when Redis is full it evicts rate-limit keys (all of them have a TTL), which resets those clients' limits, and anyone who can mint keys can evict a victim's counter. Give rate limiting a Redis with maxmemory-policy noeviction, sized for its keys (docs/reliability.md, "Redis memory").`,
  );
}

/** Redis refused a write: `maxmemory` reached and nothing may be evicted. */
export function isOutOfMemory(error: unknown): boolean {
  return redisErrorCode(typeof error === 'string' ? { message: error } : error) === 'OOM';
}
