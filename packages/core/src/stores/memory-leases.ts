/**
 * Leases in process: the twin of lua/leases/, kept in the memory store's own table (so its
 * `maxKeys`, sweep and clock apply to leases as to policy state). A key's entry holds its
 * leases (id → expiry µs) and expires with the last of them.
 */
import { type Clock, readMicros } from '../clock.js';
import type { StoreLeases } from './store.js';

/** The part of the memory store's table the leases use. */
export interface LeaseTable {
  readonly clock: Clock;
  /** µs a refusal for a full table asks to wait (the store's full-sweep spacing). */
  readonly fullRetry: number;
  /** The leases of `key` (the stored map itself), unless the key is missing or expired. */
  read(key: string, now: number): Map<string, number> | undefined;
  /** Stores `leases` for `key` until `expiresAt`; false when the table is full of live keys. */
  write(key: string, leases: Map<string, number>, expiresAt: number, now: number): boolean;
  delete(key: string): void;
}

export function memoryLeases(table: LeaseTable): StoreLeases {
  const { clock } = table;
  return {
    local: true,
    // Mirrors lua/leases/acquire.lua.
    acquire: async (key, limit, ttl, id) => {
      const now = readMicros(clock);
      const leases = table.read(key, now);
      const live: number[] = [];
      let latest = now;
      if (leases !== undefined) {
        for (const expires of leases.values()) {
          if (expires > now) live.push(expires);
          latest = Math.max(latest, expires);
        }
      }
      const held = live.length;
      if (held < limit) {
        const expires = now + ttl;
        const next = new Map<string, number>();
        if (leases !== undefined) for (const [i, e] of leases) if (e > now) next.set(i, e);
        next.set(id, expires);
        latest = Math.max(latest, expires);
        if (!table.write(key, next, latest, now)) {
          return {
            allowed: false,
            remaining: 0,
            resetAfter: 0,
            retryAfter: table.fullRetry,
            full: true,
          };
        }
        return {
          allowed: true,
          remaining: limit - held - 1,
          resetAfter: latest - now,
          retryAfter: 0,
        };
      }
      // The (held − limit + 1)-th lease to expire frees the first slot.
      live.sort((a, b) => a - b);
      return {
        allowed: false,
        remaining: 0,
        resetAfter: latest - now,
        retryAfter: live[held - limit]! - now,
      };
    },
    // Mirrors lua/leases/release.lua.
    release: async (key, id) => {
      const now = readMicros(clock);
      const leases = table.read(key, now);
      const expires = leases?.get(id);
      if (leases === undefined || expires === undefined) return false;
      leases.delete(id);
      if (leases.size === 0) table.delete(key);
      return expires > now;
    },
    // Mirrors lua/leases/renew.lua.
    renew: async (key, ttl, id) => {
      const now = readMicros(clock);
      const leases = table.read(key, now);
      const expires = leases?.get(id);
      if (leases === undefined || expires === undefined || expires <= now) return false;
      leases.set(id, now + ttl);
      let latest = now + ttl;
      for (const e of leases.values()) latest = Math.max(latest, e);
      table.write(key, leases, latest, now);
      return true;
    },
    reset: async (key) => {
      table.delete(key);
    },
  };
}
