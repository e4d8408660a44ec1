/**
 * The hot-key sketch: Space-Saving's guarantees (every key above 1 / capacity of the traffic holds a
 * counter; estimates over-count by at most `error`), decay under an injected clock, detection of a
 * key at ≥ 5 % of a mixed stream of 100,000 keys within a second, and bounded key length.
 */

import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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
    expect(top[0]).toMatchObject({ share: 0.5, error: 0, hot: true });
    expect(sketch.isHot('a')).toBe(true);
    expect(sketch.isHot('c')).toBe(true); // 1/6 ≥ 5 %
    expect(sketch.isHot('d')).toBe(false);
    expect(sketch.hot().map((k) => k.key)).toEqual(['a', 'b', 'c']);
    now = 1000; // one half-life: counts halve, and so does the span watched (1 s → 0.5 s)
    expect(sketch.top(1)[0]).toMatchObject({ key: 'a', rate: 30, share: 0.5 }); // 30 in 1 s
    now = 1500;
    expect(sketch.top(1)[0]).toMatchObject({ key: 'a', rate: 15 }); // 30 in 1.5 s
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
      // The clock never moves: counts read as rates per the 1 ms floor of the span.
      const perCount = 1000;
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
    // Flagged at the moment it crossed 5 %; in steady traffic (6 %) it stays the only hot key.
    for (let ms = 0; ms < 500; ms++, now++) {
      for (let i = 0; i < perMs; i++) {
        sketch.observe(random() < 0.06 ? 'tenant-42' : `user-${Math.floor(random() * 100_000)}`);
      }
    }
    expect(sketch.hot().map((k) => k.key)).toEqual(['tenant-42']);
  });

  it('reads steady rates exactly at every point of the halving cycle', () => {
    let now = 0;
    const sketch = new SpaceSaving({ halfLife: 200, now: () => now });
    // 'steady' at 3,000/s and 'slow' at 1,000/s, one observation per ms or per 3 ms.
    for (; now < 5000; now++) {
      sketch.observe('steady');
      sketch.observe('steady');
      sketch.observe('steady');
      if (now % 3 === 0) sketch.observe('slow');
      if (now > 1000 && now % 37 === 0) {
        const [steady, slow] = sketch.top(2);
        expect(steady?.rate).toBeGreaterThan(2900);
        expect(steady?.rate).toBeLessThan(3100);
        expect(slow?.rate).toBeGreaterThan(300);
        expect(slow?.rate).toBeLessThan(370);
      }
    }
  });

  it('reads the clock at most every 64 observations under load, and at every one when quiet', () => {
    let now = 0;
    let readings = 0;
    const sketch = new SpaceSaving({
      now: () => {
        readings++;
        return now;
      },
    });
    readings = 0;
    for (let i = 0; i < 64_000; i++) sketch.observe(`k-${i % 50}`);
    expect(readings).toBeLessThanOrEqual(64_000 / 64 + 7);
    // Quiet: one observation a second. After at most 63 counted as of the last reading, every
    // observation reads the clock again, so its count decays from its own time.
    readings = 0;
    for (let i = 0; i < 100; i++) {
      now += 1000;
      sketch.observe('quiet');
    }
    expect(readings).toBeGreaterThanOrEqual(100 - 63);
    expect(sketch.top(1)[0]).toMatchObject({ key: 'quiet' });
  });

  it('never flags a newcomer for the count it inherits, even when capacity is small', () => {
    let now = 0;
    const random = xorshift(11);
    // 10 counters: each holds ~10 % of the traffic, twice the 5 % share.
    const sketch = new SpaceSaving({ capacity: 10, now: () => now });
    let falseAlarms = 0;
    for (let ms = 0; ms < 2000; ms++, now++) {
      for (let i = 0; i < 10; i++) {
        if (sketch.observe(`k-${Math.floor(random() * 10_000)}`)) falseAlarms++;
      }
    }
    expect(falseAlarms).toBe(0);
    expect(sketch.hot()).toEqual([]);
    // A real 20 % key is still found.
    let flagged = false;
    for (let ms = 0; ms < 1000 && !flagged; ms++, now++) {
      for (let i = 0; i < 10; i++) {
        const key = i < 2 ? 'heavy' : `k-${Math.floor(random() * 10_000)}`;
        if (sketch.observe(key) && key === 'heavy') flagged = true;
      }
    }
    expect(flagged).toBe(true);
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
    // A surrogate pair straddling the cut is dropped whole, never halved.
    const emoji = `${'a'.repeat(115)}😀${'b'.repeat(200)}`;
    expect(storedKey(emoji)).toMatch(/^a{115}\.\.\.#[0-9a-f]{8}$/);
  });

  it('does not keep long keys alive through their stored prefix', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const sketch = new SpaceSaving({ capacity: 64, minTotal: 0, now: () => 0 });
    gc();
    const before = getHeapStatistics().used_heap_size;
    for (let i = 0; i < 64; i++) sketch.observe(`${i}:`.padEnd(100_000, 'k'));
    gc();
    const retained = getHeapStatistics().used_heap_size - before;
    expect(sketch.size).toBe(64);
    // 64 keys of 100,000 characters: a sketch holding views of them would keep 6.4 MB.
    expect(retained).toBeLessThan(1_000_000);
  });

  it('refuses bad options with the field named', () => {
    expect(() => new SpaceSaving({ capacity: 0 })).toThrow(/hotKeys\.capacity/);
    expect(() => new SpaceSaving({ share: 1.5 })).toThrow(/hotKeys\.share/);
    expect(() => new SpaceSaving({ halfLife: 2.5 })).toThrow(/hotKeys\.halfLife/);
    expect(() => new SpaceSaving({ minTotal: -1 })).toThrow(/hotKeys\.minTotal/);
    expect(() => new SpaceSaving({ share: '0.5' as unknown as number })).toThrow(/hotKeys\.share/);
    expect(() => new SpaceSaving({ capacity: '8' as unknown as number })).toThrow(
      /hotKeys\.capacity/,
    );
  });
});
