/** smoothBursty and smoothWarmingUp validate their options once, naming the field. */

import { DEFAULT_COLD_FACTOR } from '../../src/algorithms/smooth-warming-up';
import { smoothBursty, smoothWarmingUp } from '../../src/index';
import { configErrorOf } from '../config-error';

describe('smoothWarmingUp options', () => {
  test.each([
    ['0', 0],
    ['negative', -1000],
    ["'0s'", '0s'],
    ['not a duration', 'soon'],
  ])('warmup %s is refused, naming the field', (_what, warmup) => {
    const error = configErrorOf(() =>
      smoothWarmingUp({ limit: 5, window: '1s', warmup: warmup as never }),
    );
    expect(error.field).toBe('smoothWarmingUp.warmup');
    expect(error.code).toBe('FLOODGATE_INVALID_OPTION');
    expect(error.message).toContain('smoothWarmingUp.warmup');
  });

  test('warmup is required', () => {
    const error = configErrorOf(() => smoothWarmingUp({ limit: 5, window: '1s' } as never));
    expect(error.field).toBe('smoothWarmingUp.warmup');
    expect(error.code).toBe('FLOODGATE_MISSING_OPTION');
  });

  test.each([
    ['below 1', 0.99],
    ['0', 0],
    ['negative', -3],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['more than two decimals', 1.234],
    ['a string', '3'],
  ])('coldFactor %s is refused, naming the field', (_what, coldFactor) => {
    const error = configErrorOf(() =>
      smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', coldFactor: coldFactor as never }),
    );
    expect(error.field).toBe('smoothWarmingUp.coldFactor');
    expect(error.message).toContain('smoothWarmingUp.coldFactor');
  });

  test('coldFactor exactly 1 is accepted, as in Guava; fractions with two decimals too', () => {
    expect(
      smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', coldFactor: 1 }).options,
    ).toEqual({
      limit: 5,
      window: 1000,
      warmup: 4000,
      coldFactor: 1,
    });
    const p = smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', coldFactor: 2.25 });
    // 2.25 = 9/4: the Lua reads c and d.
    expect(p.params.slice(3, 5)).toEqual([9, 4]);
  });

  test('defaults: coldFactor 3, a derived name, capacity = limit', () => {
    const p = smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s' });
    expect(DEFAULT_COLD_FACTOR).toBe(3);
    expect(p.options.coldFactor).toBe(3);
    expect(p.name).toBe('smooth-warming-up-5-per-1s-warmup-4s');
    expect(p.capacity).toBe(5);
    const colder = smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', coldFactor: 10 });
    expect(colder.name).toBe('smooth-warming-up-5-per-1s-warmup-4s-cold-10');
    expect(colder.id).not.toBe(p.id);
  });

  test('a warm-up too long for exact arithmetic with this coldFactor is refused', () => {
    const error = configErrorOf(() =>
      smoothWarmingUp({ limit: 5, window: '1s', warmup: '100d', coldFactor: 1.01 }),
    );
    expect(error.field).toBe('smoothWarmingUp.warmup');
    expect(() =>
      smoothWarmingUp({ limit: 5, window: '1s', warmup: '1h', coldFactor: 3 }),
    ).not.toThrow();
  });

  test('unknown options are reported', () => {
    const error = configErrorOf(() =>
      smoothWarmingUp({ limit: 5, window: '1s', warmup: '4s', maxBurst: '1s' } as never),
    );
    expect(error.code).toBe('FLOODGATE_UNKNOWN_OPTION');
    expect(error.field).toBe('smoothWarmingUp.maxBurst');
  });
});

describe('smoothBursty options', () => {
  test.each([
    ['negative', -1],
    ['not a duration', 'lots'],
    ['null', null],
  ])('maxBurst %s is refused, naming the field', (_what, maxBurst) => {
    const error = configErrorOf(() =>
      smoothBursty({ limit: 5, window: '1s', maxBurst: maxBurst as never }),
    );
    expect(error.field).toBe('smoothBursty.maxBurst');
    expect(error.message).toContain('smoothBursty.maxBurst');
  });

  test('maxBurst defaults to the window (Guava: 1 s of permits); 0 stores nothing', () => {
    const p = smoothBursty({ limit: 5, window: '1s' });
    expect(p.options).toEqual({ limit: 5, window: 1000, maxBurst: 1000 });
    expect(p.name).toBe('smooth-bursty-5-per-1s');
    const none = smoothBursty({ limit: 5, window: '1s', maxBurst: 0 });
    expect(none.name).toBe('smooth-bursty-5-per-1s-max-burst-0s');
    expect(none.id).not.toBe(p.id);
  });

  test('limit and window are validated like every policy', () => {
    expect(configErrorOf(() => smoothBursty({ limit: -1, window: '1s' })).field).toBe(
      'smoothBursty.limit',
    );
    expect(configErrorOf(() => smoothBursty({ limit: 1, window: 0 })).field).toBe(
      'smoothBursty.window',
    );
    expect(
      configErrorOf(() => smoothBursty({ limit: 1, window: '1s', burst: 2 } as never)).code,
    ).toBe('FLOODGATE_UNKNOWN_OPTION');
  });
});
