/**
 * A small least-recently-used map: limiters and scoped policies are built per distinct policy
 * set, and policies chosen per request (per plan, per tenant) could otherwise grow without end.
 */

/** How many limiters (and scoped policies) the module keeps: far more than routes × plans. */
export const LIMITER_CACHE_SIZE = 1000;

export class BoundedCache<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly size: number = LIMITER_CACHE_SIZE) {}

  /** The value of `key`, made by `make` when missing; the oldest unused entry goes when full. */
  get(key: K, make: () => V): V {
    const found = this.entries.get(key);
    if (found !== undefined) {
      // Most recently used last: Map keeps insertion order.
      this.entries.delete(key);
      this.entries.set(key, found);
      return found;
    }
    const made = make();
    if (this.entries.size >= this.size) {
      this.entries.delete(this.entries.keys().next().value as K);
    }
    this.entries.set(key, made);
    return made;
  }

  /** The values kept, least recently used first. */
  values(): IterableIterator<V> {
    return this.entries.values();
  }

  /** How many entries are kept. */
  get length(): number {
    return this.entries.size;
  }
}
