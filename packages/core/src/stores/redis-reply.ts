/** Reading the engine script's table reply (one verdict, then five fields per policy). */
import type { StoreDecision, StoreResult } from '../decision.js';
import { RateLimitStoreError } from '../errors.js';
import { NOT_RUN_REPLY, notRunError } from './send-ticket.js';

const FIELDS_PER_POLICY = 5;

/** What `run` answers for a reset, whose reply is not a decision. */
export const NO_DECISION: StoreDecision = Object.freeze({ admitted: true, results: [] });

export function decodeDecision(reply: unknown, n: number): StoreDecision {
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
