/**
 * The hot-key sketch: Space-Saving's guarantees (every key above 1 / capacity of the traffic holds a
 * counter; estimates over-count by at most `error`), decay under an injected clock, detection of a
 * key at ≥ 5 % of a mixed stream of 100,000 keys within a second, and bounded key length.
 */

import { MAX_STORED_KEY, SpaceSaving, storedKey } from '../../src/hot-keys/space-saving';

/** A deterministic pseudo-random stream (xorshift32). */
function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

describe('SpaceSaving', () => {
  it('counts exactly while the keys fit, and answers the top keys by rate', () => {
    let now = 0;
    const sketch = new SpaceSaving({ capacity: 4, halfLife: 1000, minTotal: 0, now: () => now });
    for (let i = 0; i < 30; i++) sketch.observe('a');
    for (let i = 0; i < 20; i++) sketch.observe('b');
    for (let i = 0; i < 10; i++) sketch.observe('c');
    const top = sketch.top(2);
    expect(top.map((k) => k.key)).toEqual(['a', 'b']);
    expect(top[0]).toMatchObject({ share: 0.5, error: 0, rate: 15 }); // 30 / (2 · 1 s)
    expect(sketch.isHot('a')).toBe(true);
    expect(sketch.isHot('c')).toBe(true); // 1/6 ≥ 5 %
    expect(sketch.isHot('d')).toBe(false);
    now = 1000; // one half-life: counts halve, shares stay
    expect(sketch.top(1)[0]).toMatchObject({ key: 'a', rate: 7.5, share: 0.5 });
  });

  it('keeps every key above total / capacity, over-counting by at most its error', () => {
    const random = xorshift(7);
    const sketch = new SpaceSaving({
      capacity: 50,
      halfLife: 10_000_000,
      minTotal: 0,
      now: () => 0,
    });
    const truth = new Map<string, number>();
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      // 3 heavy keys (10 %, 5 %, 3 %) in a tail of 5,000 keys.
      const r = random();
      const key =
        r < 0.1
          ? 'heavy-1'
          : r < 0.15
            ? 'heavy-2'
            : r < 0.18
              ? 'heavy-3'
              : `tail-${Math.floor(random() * 5000)}`;
      truth.set(key, (truth.get(key) ?? 0) + 1);
      sketch.observe(key);
    }
    const top = sketch.top(50);
    for (const heavy of ['heavy-1', 'heavy-2', 'heavy-3']) {
      const entry = top.find((k) => k.key === heavy);
      expect(entry).toBeDefined();
      // Counts from rates: rate = count / (2 · halfLife) per second.
      const perCount = 1000 / (2 * 10_000_000);
      const estimate = (entry?.rate ?? 0) / perCount;
      const error = (entry?.error ?? 0) / perCount;
      const exact = truth.get(heavy) ?? 0;
      expect(estimate).toBeGreaterThanOrEqual(exact - 1e-6);
      expect(estimate).toBeLessThanOrEqual(exact + error + 1e-6);
    }
    expect(top.slice(0, 3).map((k) => k.key)).toEqual(['heavy-1', 'heavy-2', 'heavy-3']);
    expect(sketch.size).toBe(50);
  });

  it('flags a key taking 6 % of a 100,000-key stream within one second of it starting', () => {
    let now = 0;
    const random = xorshift(42);
    const sketch = new SpaceSaving({ now: () => now });
    const perMs = 20; // 20,000 decisions a second
    // One second of cold traffic over 100,000 keys, then the hot key appears.
    for (let ms = 0; ms < 1000; ms++, now++) {
      for (let i = 0; i < perMs; i++) sketch.observe(`user-${Math.floor(random() * 100_000)}`);
    }
    expect(sketch.hot()).toEqual([]);
    let flaggedAfter = -1;
    for (let ms = 0; ms < 2000 && flaggedAfter < 0; ms++, now++) {
      for (let i = 0; i < perMs; i++) {
        const key = random() < 0.06 ? 'tenant-42' : `user-${Math.floor(random() * 100_000)}`;
        if (sketch.observe(key) && key === 'tenant-42') flaggedAfter = ms;
      }
    }
    expect(flaggedAfter).toBeGreaterThanOrEqual(0);
    expect(flaggedAfter).toBeLessThan(1000);
    expect(sketch.hot().map((k) => k.key)).toEqual(['tenant-42']);
  });

  it('does not flag a key at 2 % of the traffic, nor anything before minTotal observations', () => {
    let now = 0;
    const random = xorshift(3);
    const sketch = new SpaceSaving({ now: () => now });
    expect(sketch.observe('first')).toBe(false); // 1 of 1, but below minTotal
    for (let ms = 0; ms < 3000; ms++, now++) {
      for (let i = 0; i < 10; i++)
        sketch.observe(random() < 0.02 ? 'warm' : `k-${Math.floor(random() * 10_000)}`);
    }
    expect(sketch.isHot('warm')).toBe(false);
    expect(sketch.top(1)[0]?.key).toBe('warm');
  });

  it('forgets a key that went quiet, and everything after a long silence', () => {
    let now = 0;
    const sketch = new SpaceSaving({ now: () => now });
    for (let i = 0; i < 500; i++) sketch.observe('burst');
    expect(sketch.isHot('burst')).toBe(true);
    now += 200 * 30;
    expect(sketch.isHot('burst')).toBe(false);
    expect(sketch.size).toBe(0);
    expect(sketch.top()).toEqual([]);
  });

  it('stores long keys shortened with a hash, so memory stays bounded', () => {
    const long = 'x'.repeat(10_000);
    const other = `${'x'.repeat(9_999)}y`;
    expect(storedKey(long)).toHaveLength(MAX_STORED_KEY);
    expect(storedKey(long)).not.toBe(storedKey(other));
    expect(storedKey('short')).toBe('short');
    const sketch = new SpaceSaving({ capacity: 2, minTotal: 0, now: () => 0 });
    sketch.observe(long);
    expect(sketch.top(1)[0]?.key).toBe(storedKey(long));
  });

  it('refuses bad options with the field named', () => {
    expect(() => new SpaceSaving({ capacity: 0 })).toThrow(/hotKeys\.capacity/);
    expect(() => new SpaceSaving({ share: 1.5 })).toThrow(/hotKeys\.share/);
    expect(() => new SpaceSaving({ halfLife: 2.5 })).toThrow(/hotKeys\.halfLife/);
    expect(() => new SpaceSaving({ minTotal: -1 })).toThrow(/hotKeys\.minTotal/);
  });
});
