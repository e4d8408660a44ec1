/** The memory store's options and their defaults. */
import type { Clock } from '../clock.js';

export interface MemoryStoreOptions {
  /** Epoch milliseconds (fractions allowed). @default the process clock */
  clock?: Clock;
  /**
   * Most keys held at once (one per key and policy). Expired keys are swept to make room; live
   * ones are never evicted (see `maxKeys` in the README for why), so when the table is full of
   * live keys a new key is denied with `reason: 'store-full'` until room frees up.
   * @default 1_000_000
   */
  maxKeys?: number;
}

/** @default 1_000_000 keys */
export const DEFAULT_MAX_KEYS = 1_000_000;
/** How often an unref'd timer drops expired keys (ms). */
export const SWEEP_INTERVAL_MS = 60_000;
