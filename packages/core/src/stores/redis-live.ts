/**
 * How a live script's replies read (lua/include/live.lua): a key without overrides answers as
 * the engine does; a key with some answers { reply, stored overrides }, and the reply is read
 * with the overrides' parameters (a packed reply depends on them), the decision carrying them.
 */
import { ALGORITHMS } from '../algorithms/index.js';
import type { StoreDecision } from '../decision.js';
import { type StoredLimits, StoredLimitsReader } from '../live-limits.js';
import type { Policy } from '../policy.js';
import { decodeDecision, type Unpacker, unpackers } from './redis-reply.js';

/** A limiter's reader of live replies (one per prepared limiter). */
export class LiveReplies {
  private readonly reader: StoredLimitsReader;
  /** Each stored value's unpackers, made once. */
  private readonly unpack = new WeakMap<StoredLimits, (Unpacker | undefined)[]>();

  constructor(policies: readonly Policy[]) {
    this.reader = new StoredLimitsReader(policies);
  }

  /** `plain` (the limiter's own decoding of a `cost` call) for replies without overrides. */
  decoder(
    plain: (reply: unknown) => StoreDecision,
    cost: number,
  ): (reply: unknown) => StoreDecision {
    return (reply) => {
      if (!Array.isArray(reply) || reply.length !== 2 || typeof reply[1] !== 'string') {
        return plain(reply);
      }
      const live = this.reader.read(reply[1]);
      return { ...this.decode(reply[0], live, cost), policies: live.policies, live };
    };
  }

  private decode(reply: unknown, live: StoredLimits, cost: number): StoreDecision {
    const policies = live.policies;
    if (policies.length === 1 && typeof reply === 'number') {
      const p = policies[0]!;
      const r = ALGORITHMS[p.kind]!.unpack!(reply, cost, p.params);
      return { admitted: r.allowed, results: [r] };
    }
    let each = this.unpack.get(live);
    if (each === undefined) {
      each = unpackers(policies);
      this.unpack.set(live, each);
    }
    return decodeDecision(reply, each, cost);
  }
}
