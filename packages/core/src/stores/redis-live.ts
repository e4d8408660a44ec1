/**
 * How a live script's replies read (lua/include/live.lua): a key without overrides answers as
 * the engine does; a key with some answers { reply, stored overrides }, and the reply is read
 * with the overrides' parameters (a packed reply depends on them), the decision carrying them.
 * A key the override for every key applied to answers { reply, stored or '', its version }.
 */
import { ALGORITHMS } from '../algorithms/index.js';
import type { StoreDecision } from '../decision.js';
import { combineLimits, type GlobalLimits } from '../live-global.js';
import { type StoredLimits, StoredLimitsReader } from '../live-limits.js';
import type { Policy } from '../policy.js';
import { decodeDecision, type Unpacker, unpackers } from './redis-reply.js';

/** A limiter's reader of live replies (one per prepared limiter). */
export class LiveReplies {
  private readonly reader: StoredLimitsReader;
  /** Each stored value's unpackers, made once. */
  private readonly unpack = new WeakMap<StoredLimits, (Unpacker | undefined)[]>();
  /** The global records this process sent lately, by version (a reply names its own). */
  private readonly globals = new Map<string, GlobalLimits>();
  /** Each (global version, stored value) pair's combined overrides, made once. */
  private readonly combined = new Map<string, StoredLimits>();

  constructor(private readonly policies: readonly Policy[]) {
    this.reader = new StoredLimitsReader(policies);
  }

  /** A global record calls may now be sent with (the last few are kept for late replies). */
  holdGlobal(global: GlobalLimits): void {
    this.globals.set(global.version, global);
    if (this.globals.size > 4) this.globals.delete(this.globals.keys().next().value!);
    this.combined.clear();
  }

  /** `plain` (the limiter's own decoding of a `cost` call) for replies without overrides. */
  decoder(
    plain: (reply: unknown) => StoreDecision,
    cost: number,
  ): (reply: unknown) => StoreDecision {
    return (reply) => {
      if (!Array.isArray(reply) || reply.length < 2 || typeof reply[1] !== 'string') {
        return plain(reply);
      }
      const live =
        reply.length === 3
          ? this.withGlobal(reply[1], String(reply[2]))
          : this.reader.read(reply[1]);
      return { ...this.decode(reply[0], live, cost), policies: live.policies, live };
    };
  }

  private withGlobal(stored: string, version: string): StoredLimits {
    const id = `${version}/${stored}`;
    let found = this.combined.get(id);
    if (found === undefined) {
      const global = this.globals.get(version);
      if (global === undefined)
        throw new Error(`a reply for an unknown global override ${version}`);
      found = combineLimits(
        this.policies,
        global,
        stored === '' ? undefined : this.reader.read(stored),
      );
      if (this.combined.size >= 1000) this.combined.clear();
      this.combined.set(id, found);
    }
    return found;
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
