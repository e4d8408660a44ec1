/** Holds a store's commands until its Redis client is first ready (short-lived processes). */
import type { SendTicket } from './send-ticket.js';

/** The part of a client's event API the gate listens with (ioredis and node-redis alike). */
interface ReadyEvents {
  once(event: 'ready' | 'end', listener: () => void): unknown;
}

/**
 * A process that decides right after creating its client (a serverless handler, a cron job)
 * would otherwise see every decision fail with the fail-fast settings docs/reliability.md
 * recommends (no offline queue), and `'open'` would admit it uncounted. (With an offline
 * queue, the client holds early commands itself: no gate.) Until the client's
 * first `ready`, commands wait for it, while the client is connecting (never for a client nobody
 * connects, whose commands fail at once and say why); the limiter's `timeout` bounds the wait,
 * and a call whose ticket is abandoned stops waiting. Once the client has been ready, nothing
 * waits again: a later outage fails fast, as configured.
 */
export class FirstReady {
  private ready: boolean;
  private readonly waiters = new Set<() => void>();

  constructor(
    client: ReadyEvents,
    /** Whether the client is ready now. */
    private readonly isReady: () => boolean,
    /** Whether it is on its way to ready (connecting), so a command may wait for it. */
    private readonly connecting: () => boolean,
  ) {
    this.ready = isReady();
    if (this.ready) return;
    client.once('ready', () => {
      this.ready = true;
      this.release();
    });
    // A client closed before it was ever ready: its waiting commands go out and fail.
    client.once('end', () => this.release());
  }

  private release(): void {
    for (const waiter of this.waiters) waiter();
    this.waiters.clear();
  }

  /** Runs `send` now, or once the client is first ready. */
  run<T>(send: () => Promise<T>, ticket?: SendTicket): Promise<T> {
    if (this.ready || this.isReady() || !this.connecting()) return send();
    return new Promise<void>((resolve, reject) => {
      const signal = ticket?.signal;
      const onAbort = () => {
        this.waiters.delete(waiter);
        reject(new Error('abandoned while waiting for the Redis client to be ready'));
      };
      const waiter = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    }).then(send);
  }
}

/** ioredis `status` values on the way to `ready` (`wait` is lazyConnect: the command connects). */
const IOREDIS_CONNECTING = new Set(['connecting', 'connect', 'reconnecting']);

/**
 * The gate of an ioredis Redis or Cluster made with `enableOfflineQueue: false` (undefined
 * otherwise: its offline queue holds early commands until ready by itself).
 */
export function ioredisFirstReady(client: object): FirstReady | undefined {
  const c = client as Partial<ReadyEvents> & {
    status?: unknown;
    options?: { enableOfflineQueue?: unknown };
  };
  if (typeof c.once !== 'function' || typeof c.status !== 'string') return undefined;
  if (c.options?.enableOfflineQueue !== false) return undefined;
  return new FirstReady(
    c as ReadyEvents,
    () => c.status === 'ready',
    () => IOREDIS_CONNECTING.has(c.status as string),
  );
}

/**
 * The gate of a node-redis client made with `disableOfflineQueue: true` (undefined otherwise,
 * and for one without `isReady`/`isOpen`).
 */
export function nodeRedisFirstReady(client: object): FirstReady | undefined {
  const c = client as Partial<ReadyEvents> & {
    isReady?: unknown;
    isOpen?: unknown;
    options?: { disableOfflineQueue?: unknown };
  };
  if (typeof c.once !== 'function' || typeof c.isReady !== 'boolean') return undefined;
  if (c.options?.disableOfflineQueue !== true) return undefined;
  // Open but not ready: connect() was called and has not finished.
  return new FirstReady(
    c as ReadyEvents,
    () => c.isReady === true,
    () => c.isOpen === true && c.isReady !== true,
  );
}
