/** The memory store's options, their defaults, and the shapes of its table. */
import type { Algorithm } from '../algorithms/index.js';
import type { Clock } from '../clock.js';
import { optionNames } from '../options.js';
import type { Lockout } from '../policy.js';

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

/** When full, at most one full sweep per this many µs of store time; denials retry after it. */
export const FULL_SWEEP_SPACING_US = 1_000_000;

export interface Entry {
  state: unknown;
  /** Store time (µs) after which the state no longer matters. */
  expiresAt: number;
  /** Set when the entry leaves the table: a limiter's remembered slot must look it up again. */
  dropped?: true;
}

/** A limiter's policies as the store runs them: their twins, params and lockouts. */
export interface Plan {
  readonly algorithms: readonly Algorithm[];
  readonly params: readonly (readonly number[])[];
  readonly lockouts: readonly (Lockout | undefined)[];
}

/** Every option name of MemoryStoreOptions, checked against the type. */
export const MEMORY_STORE_OPTION_NAMES = optionNames<MemoryStoreOptions>({
  clock: true,
  maxKeys: true,
});
