/**
 * The bounds of a RateLimiter's memo of recent keys' storage keys (rate-limiter.ts `keysOf`):
 * a freshly concatenated key costs a flatten and a hash on every lookup, a remembered one not.
 */

/**
 * A recent key's storage keys, and one slot per key that an in-process store may fill (the
 * memory store keeps the key's entry there, saving a hash lookup per decision).
 */
export interface KeyMemo {
  readonly keys: readonly string[];
  readonly slots: unknown[];
}

/** Keys whose storage keys a limiter remembers; past it the memo starts over (amortised O(1)). */
export const KEY_MEMO_SIZE = 10_000;
/**
 * Bytes the memo may hold (2 per UTF-16 unit of each key and storage key, plus a fixed overhead
 * per entry): keys are caller input, and 10 000 keys of 16 KB would otherwise pin 320 MB.
 */
export const KEY_MEMO_BYTES = 4 * 1024 * 1024;
export const KEY_MEMO_ENTRY_BYTES = 200;
