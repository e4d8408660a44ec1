/** The Redis scripts' modes (ARGV[1], lua/include/prelude.lua) and how their replies read. */
import type { StoreDecision, StoreResult } from '../decision.js';
import { RateLimitStoreError } from '../errors.js';
import { NOT_RUN_REPLY, notRunError } from './send-ticket.js';

export const MODE_CONSUME = '0';
export const MODE_PEEK = '1';
export const MODE_RESET = '2';
export const MODE_RESERVE = '3';
export const MODE_BLOCK = '4';
export const MODE_UNBLOCK = '5';
export const MODE_REFUND = '6';
const FIELDS_PER_POLICY = 5;

/**
 * The Redis script's reply for a blocked key, { 2, by (0: by hand), left µs (−1: for ever) }, as
 * a StoreDecision; undefined for any other reply (lua/include/engine.lua).
 */
function blockedReply(reply: unknown): StoreDecision | undefined {
  if (!Array.isArray(reply) || reply[0] !== 2 || reply.length !== 3) return undefined;
  const blocked = { by: Number(reply[1]) - 1, left: Number(reply[2]) };
  return { admitted: false, results: [], blocked };
}

/** What `run` answers for a reset, whose reply is not a decision. */
export const NO_DECISION: StoreDecision = Object.freeze({ admitted: true, results: [] });

export function decodeDecision(reply: unknown, n: number): StoreDecision {
  const blocked = blockedReply(reply);
  if (blocked !== undefined) return blocked;
  if (!Array.isArray(reply) || reply.length !== 1 + FIELDS_PER_POLICY * n) {
    if (reply === NOT_RUN_REPLY) throw new RateLimitStoreError(notRunError().message);
    throw new RateLimitStoreError(
      `unexpected reply from the rate-limit script: ${JSON.stringify(reply)}`,
    );
  }
  const results: StoreResult[] = new Array(n);
  for (let i = 0, j = 1; i < n; i++, j += FIELDS_PER_POLICY) {
    results[i] = {
      allowed: reply[j] === 1,
      remaining: Number(reply[j + 1]),
      resetAfter: Number(reply[j + 2]),
      retryAfter: Number(reply[j + 3]),
      delay: Number(reply[j + 4]),
    };
  }
  return { admitted: reply[0] === 1, results };
}
