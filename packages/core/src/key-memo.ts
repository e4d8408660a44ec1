/**
 * A RateLimiter's memo of recent keys' storage keys, and its bounds: a freshly concatenated key
 * costs a flatten and a hash on every lookup, a remembered one not.
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

/**
 * Storage keys for the hot path, remembered for up to KEY_MEMO_SIZE recent keys (and
 * KEY_MEMO_BYTES): a freshly concatenated key costs a flatten and a hash on every Map or Redis
 * lookup (measured ~10× a lookup by a reused string; docs/benchmarks.md).
 */
export class KeyMemoTable {
  private readonly memo = new Map<string, KeyMemo>();
  /** What the memo holds, counted as in KEY_MEMO_BYTES. */
  private bytes = 0;

  constructor(private readonly storageKeys: (key: string) => string[]) {}

  /** `key`'s storage keys and slots, built on first use. */
  get(key: string): KeyMemo {
    const memo = this.memo;
    let entry = memo.get(key);
    if (entry === undefined) {
      const keys = this.storageKeys(key);
      entry = { keys, slots: new Array(keys.length) };
      let bytes = key.length;
      for (const k of keys) bytes += k.length;
      bytes = bytes * 2 + KEY_MEMO_ENTRY_BYTES;
      if (memo.size >= KEY_MEMO_SIZE || this.bytes + bytes > KEY_MEMO_BYTES) {
        memo.clear();
        this.bytes = 0;
      }
      memo.set(key, entry);
      this.bytes += bytes;
    }
    return entry;
  }
}
