/**
 * A fixed-memory top-K sketch of the keys a process sees: Space-Saving (Metwally, Agrawal and
 * El Abbadi, "Efficient Computation of Frequent and Top-k Elements in Data Streams", 2005) with
 * exponential decay, so its counts describe the last second or so of traffic rather than all of it.
 *
 * Space-Saving keeps `capacity` counters. A key already counted is incremented; a new key takes the
 * smallest counter's place and inherits its count as an over-estimate (`error`). Every key whose true
 * count exceeds total / capacity is guaranteed to hold a counter, and a key's estimate exceeds its true
 * count by at most its `error`. The counters sit in a binary min-heap, so an observation costs
 * O(log capacity) and memory is fixed: at most `capacity` entries with keys of at most
 * MAX_STORED_KEY characters (a longer key is stored shortened with a hash, copied so that the
 * sketch never keeps the long original alive, see `storedKey`).
 *
 * Decay: every `halfLife` ms all counts (and the total) are halved, which keeps the heap's order. The
 * sketch halves the time it has watched the same way (`span`: h · (1 − 2^−k) after k halvings, plus
 * the time since the last one), so a key's `rate` is count / span, exact for steady traffic at every
 * point of the halving cycle (count / (2 · halfLife) would read half the rate just after a halving),
 * and its share of the traffic is count / total. A key is hot when its guaranteed count (count −
 * error, what it certainly received since it took its counter) is at least `share` of the total, so
 * an evicted key's inherited count never flags a cold newcomer, whatever `capacity` is. With the
 * default half-life of 200 ms a key that starts taking 6 % of a steady stream is above a 5 %
 * threshold within a second (0.06 · (1 − 2^−5) ≈ 5.8 %).
 */

import { RateLimitConfigError } from '../errors.js';

/** One key of the sketch's top list. */
export interface HotKey {
  /** The key (shortened with a hash when longer than 128 characters). */
  readonly key: string;
  /** Estimated decisions per second (an over-estimate by at most `error`'s rate). */
  readonly rate: number;
  /** Estimated fraction of the recent traffic, 0 … 1. */
  readonly share: number;
  /** How much of the estimate may be inherited from an evicted key, in decisions per second. */
  readonly error: number;
  /** Whether the key is hot: its guaranteed share ((rate − error) / total) is at least `share`. */
  readonly hot: boolean;
}

/** Options of a {@link SpaceSaving} sketch. */
export interface SpaceSavingOptions {
  /**
   * Counters kept; any key above 1 / capacity of the traffic is guaranteed one.
   * @default 128
   */
  readonly capacity?: number;
  /**
   * A key is hot when its share of the recent traffic is at least this.
   * @default 0.05
   */
  readonly share?: number;
  /**
   * Milliseconds after which every count is halved.
   * @default 200
   */
  readonly halfLife?: number;
  /**
   * Recent observations (decayed total) needed before any key is called hot, so the first few
   * decisions of a process do not flag whatever came first.
   * @default 100
   */
  readonly minTotal?: number;
  /** Milliseconds now; injected in tests. @default Date.now */
  readonly now?: () => number;
}

/** The longest key stored as is; longer keys are cut and suffixed with a hash of the whole. */
export const MAX_STORED_KEY = 128;
const DEFAULT_CAPACITY = 128;
const DEFAULT_SHARE = 0.05;
const DEFAULT_HALF_LIFE_MS = 200;
const DEFAULT_MIN_TOTAL = 100;
/** Most observations counted between two readings of the clock (see `#tick`). */
const MAX_UNTIMED = 64;
/** Past this many half-lives every count is below 2^-30 of what it was: start from empty. */
const FORGET_AFTER_HALVINGS = 30;

interface Counter {
  key: string;
  count: number;
  error: number;
  /** Position in the heap. */
  at: number;
}

/** Where a long key is cut: room for SHORTENED_MARK and the 8 hex digits of its hash. */
const SHORTENED_MARK = '...#';
const SHORTENED_PREFIX = MAX_STORED_KEY - SHORTENED_MARK.length - 8;

/** FNV-1a over UTF-16 code units, as 8 hex digits: identifies a shortened key. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, '0');
}

/**
 * The key as the sketch stores it: bounded in length so memory stays bounded. A longer key keeps
 * its first characters (never half of a surrogate pair) and the hash of the whole. The result is
 * a fresh string: V8 represents `slice` and `+` results as views of their parts, which would keep
 * a megabyte key alive through its 128-character prefix.
 */
export function storedKey(key: string): string {
  if (key.length <= MAX_STORED_KEY) return key;
  let cut = SHORTENED_PREFIX;
  const last = key.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--; // a high surrogate: keep the pair whole or not at all
  return flat(`${key.slice(0, cut)}${SHORTENED_MARK}${fnv1a(key)}`);
}

/** `text` as one sequential string, sharing no characters with the strings it was built from. */
function flat(text: string): string {
  // Reading a string as a number makes V8 flatten it into a new sequential string in place.
  Number(text);
  return text;
}

function invalid(field: string, value: unknown, rule: string): RateLimitConfigError {
  return new RateLimitConfigError(
    'FLOODGATE_INVALID_OPTION',
    `hotKeys.${field}`,
    value,
    `hotKeys.${field} must be ${rule}; got ${String(value)}`,
  );
}

function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalid(field, value, 'a positive integer');
  }
  return value;
}

/** A decaying Space-Saving sketch of the most frequent keys; see the module comment. */
export class SpaceSaving {
  readonly capacity: number;
  readonly share: number;
  readonly halfLife: number;
  readonly minTotal: number;
  readonly #now: () => number;
  readonly #byKey = new Map<string, Counter>();
  readonly #heap: Counter[] = [];
  #total = 0;
  /** Milliseconds watched, decayed like the counts, up to the last halving. */
  #span = 0;
  #decayedAt: number;
  /** Observations between clock readings (1 … MAX_UNTIMED), and how many are left until the next. */
  #every = 1;
  #untimed = 0;
  #observedAt: number;

  constructor(options: SpaceSavingOptions = {}) {
    this.capacity = positiveInteger(options.capacity ?? DEFAULT_CAPACITY, 'capacity');
    this.halfLife = positiveInteger(options.halfLife ?? DEFAULT_HALF_LIFE_MS, 'halfLife');
    const share: unknown = options.share ?? DEFAULT_SHARE;
    if (!(typeof share === 'number' && share > 0 && share <= 1)) {
      throw invalid('share', options.share, 'a number in (0, 1]');
    }
    this.share = share;
    const minTotal: unknown = options.minTotal ?? DEFAULT_MIN_TOTAL;
    if (!(typeof minTotal === 'number' && Number.isFinite(minTotal) && minTotal >= 0)) {
      throw invalid('minTotal', options.minTotal, 'a number ≥ 0');
    }
    this.minTotal = minTotal;
    this.#now = options.now ?? Date.now;
    this.#decayedAt = this.#now();
    this.#observedAt = this.#decayedAt;
  }

  /** Counts `weight` (default 1) observations of `key`; answers whether the key is now hot. */
  observe(key: string, weight = 1): boolean {
    if (--this.#untimed < 0) this.#tick();
    const stored = storedKey(key);
    let counter = this.#byKey.get(stored);
    if (counter) {
      counter.count += weight;
    } else if (this.#heap.length < this.capacity) {
      counter = { key: stored, count: weight, error: 0, at: this.#heap.length };
      this.#heap.push(counter);
      this.#byKey.set(stored, counter);
      this.#up(counter.at);
    } else {
      // Space-Saving: the new key takes the smallest counter and inherits its count as error.
      counter = this.#heap[0] as Counter;
      this.#byKey.delete(counter.key);
      counter.key = stored;
      counter.error = counter.count;
      counter.count += weight;
      this.#byKey.set(stored, counter);
    }
    this.#total += weight;
    this.#down(counter.at);
    return this.#hot(counter);
  }

  /** Whether `key` takes at least `share` of the recent traffic (guaranteed seen above 1/capacity). */
  isHot(key: string): boolean {
    this.#decay();
    const counter = this.#byKey.get(storedKey(key));
    return counter !== undefined && this.#hot(counter);
  }

  /** The `n` keys with the highest estimated rates, highest first. */
  top(n = 10): HotKey[] {
    this.#decay();
    return this.#describe(
      [...this.#heap].sort((a, b) => b.count - a.count).slice(0, Math.max(0, n)),
    );
  }

  /** The keys that are hot now (guaranteed share ≥ `share`), highest first. */
  hot(): HotKey[] {
    this.#decay();
    return this.#describe(this.#heap.filter((c) => this.#hot(c)).sort((a, b) => b.count - a.count));
  }

  #describe(counters: readonly Counter[]): HotKey[] {
    // Counts per millisecond watched; at least 1 ms, so a burst at one instant reads finite.
    const perSecond = 1000 / Math.max(1, this.#span + (this.#now() - this.#decayedAt));
    return counters.map((c) => ({
      key: c.key,
      rate: c.count * perSecond,
      share: this.#total > 0 ? c.count / this.#total : 0,
      error: c.error * perSecond,
      hot: this.#hot(c),
    }));
  }

  /** Forgets every key. */
  clear(): void {
    this.#byKey.clear();
    this.#heap.length = 0;
    this.#total = 0;
    this.#span = 0;
    this.#decayedAt = this.#now();
  }

  /** Counters in use. */
  get size(): number {
    return this.#heap.length;
  }

  #hot(counter: Counter): boolean {
    return (
      this.#total >= this.minTotal && counter.count - counter.error >= this.share * this.#total
    );
  }

  /**
   * Reads the clock for `observe`. A clock reading costs more than the rest of an observation
   * (Date.now() is 25–130 ns, a counted key ~50 ns), so under heavy traffic the clock is read
   * every `#every` observations: doubled while readings come less than halfLife / 64 apart (at
   * most MAX_UNTIMED), back to 1 as soon as they do not. Observations between readings count as of the last one, so at
   * most MAX_UNTIMED − 1 of them are decayed as if older than they are; readers (`top`, `hot`,
   * `isHot`) read the clock every time.
   */
  #tick(): void {
    const now = this.#now();
    const quick = now - this.#observedAt < this.halfLife / 64;
    this.#observedAt = now;
    this.#every = quick ? Math.min(MAX_UNTIMED, this.#every * 2) : 1;
    this.#untimed = this.#every - 1;
    this.#decay(now);
  }

  /** Halves every count once per elapsed half-life (the heap's order is unchanged). */
  #decay(now = this.#now()): void {
    const halvings = Math.floor((now - this.#decayedAt) / this.halfLife);
    if (halvings <= 0) {
      if (now < this.#decayedAt) this.#decayedAt = now; // a clock that stepped back
      return;
    }
    this.#decayedAt += halvings * this.halfLife;
    if (halvings >= FORGET_AFTER_HALVINGS) {
      this.clear();
      return;
    }
    const factor = 2 ** -halvings;
    for (const c of this.#heap) {
      c.count *= factor;
      c.error *= factor;
    }
    this.#total *= factor;
    // Each halving: span = (span + halfLife) / 2, so after k of them h + (span − h) · 2^−k.
    this.#span = this.halfLife + (this.#span - this.halfLife) * factor;
  }

  #swap(i: number, j: number): void {
    const heap = this.#heap;
    const a = heap[i] as Counter;
    const b = heap[j] as Counter;
    heap[i] = b;
    heap[j] = a;
    b.at = i;
    a.at = j;
  }

  #up(i: number): void {
    const heap = this.#heap;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] as Counter).count <= (heap[i] as Counter).count) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const heap = this.#heap;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) return;
      const right = left + 1;
      let least = left;
      if (right < heap.length && (heap[right] as Counter).count < (heap[left] as Counter).count)
        least = right;
      if ((heap[i] as Counter).count <= (heap[least] as Counter).count) return;
      this.#swap(i, least);
      i = least;
    }
  }
}
