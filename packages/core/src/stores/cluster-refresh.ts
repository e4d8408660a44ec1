/**
 * node-redis (5.x) refreshes a cluster's slot map only when a node answers MOVED. When a master
 * dies it never answers again, so the client keeps addressing it after a replica took its slots
 * over: every call on those slots fails until the old node is back. ioredis refreshes on
 * connection errors by itself.
 *
 * When a call on a node-redis cluster fails with anything but a Redis error reply (the node's
 * connection is down, its offline queue timed out, the call was abandoned), this asks another
 * master, through the cluster's public `sendCommand`, whether the failed key exists: that master
 * does not serve the key's slot, so it answers MOVED with the slot's current owner, and the
 * client follows it by refreshing its slot map. Once the failover is done the next call reaches
 * the promoted replica. Probes are read-only (`EXISTS`), one at a time, at most one per
 * `PROBE_INTERVAL_MS`, and bounded by `PROBE_TIMEOUT_MS`.
 */
import { keySlot } from './redis-batch.js';

// biome-ignore lint/suspicious/noExplicitAny: the client's own signature is wider than any one call
type Fn = (...args: any[]) => Promise<unknown>;

/** The public members of a node-redis cluster (`createCluster()`) the refresher uses. */
export interface NodeRedisClusterLike {
  sendCommand: Fn;
  readonly masters?: unknown;
  readonly slots?: ReadonlyArray<{ readonly master?: unknown } | undefined>;
}

/** Least time between two probes, so an outage costs at most a few reads a second. */
export const PROBE_INTERVAL_MS = 100;
/** A probe that gets no answer (the MOVED pointed at the dead node again) is dropped after this. */
export const PROBE_TIMEOUT_MS = 1000;

/** Returns what to call with a failed call's key and error. */
export function slotRefresher(client: NodeRedisClusterLike): (key: string, error: unknown) => void {
  let busy = false;
  let last = -Infinity;
  return (key, error) => {
    if (busy || isErrorReply(error) || !Array.isArray(client.slots)) return;
    const now = performance.now();
    if (now - last < PROBE_INTERVAL_MS) return;
    const routing = keyServedElsewhere(client.slots, keySlot(key));
    if (routing === undefined) return;
    busy = true;
    last = now;
    const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS);
    let probe: Promise<unknown>;
    try {
      probe = client.sendCommand(routing, false, ['EXISTS', key], { abortSignal: signal, signal });
    } catch {
      busy = false;
      return;
    }
    probe
      .catch(() => undefined)
      .finally(() => {
        busy = false;
      });
  };
}

/**
 * A Redis error reply (node-redis `ErrorReply` and its subclasses): the node answered, so its
 * connection is fine and the slot map is not the problem (MOVED is followed by the client).
 */
function isErrorReply(error: unknown): boolean {
  for (let proto = error; proto !== null && typeof proto === 'object'; ) {
    proto = Object.getPrototypeOf(proto);
    const name = (proto as { constructor?: { name?: string } } | null)?.constructor?.name;
    if (name === 'ErrorReply') return true;
  }
  return false;
}

/** A key whose slot the client believes another master serves, tried from a random start. */
function keyServedElsewhere(
  slots: ReadonlyArray<{ readonly master?: unknown } | undefined>,
  slot: number,
): string | undefined {
  const owner = slots[slot]?.master;
  const start = Math.floor(Math.random() * 1_000_000);
  for (let i = 0; i < 64; i++) {
    const candidate = `floodgate-probe-${start + i}`;
    const master = slots[keySlot(candidate)]?.master;
    if (master !== undefined && master !== owner) return candidate;
  }
  return undefined;
}
