/** slidingWindow and leakyBucket: bad options fail at construction, naming the field and the value. */
import { leakyBucket, slidingWindow } from '../../src/index';
import { configErrorOf } from '../config-error';

const factories = {
  slidingWindow: (o: unknown) => slidingWindow(o as never),
  leakyBucket: (o: unknown) => leakyBucket(o as never),
};

describe.each(Object.entries(factories))('%s shared options', (name, make) => {
  test.each([
    ['missing', undefined, 'FLOODGATE_MISSING_OPTION'],
    ['negative', -1, 'FLOODGATE_INVALID_OPTION'],
    ['very negative', -5, 'FLOODGATE_INVALID_OPTION'],
    ['fractional', 2.5, 'FLOODGATE_INVALID_OPTION'],
    ['a string', '10', 'FLOODGATE_INVALID_OPTION'],
  ])('limit %s', (_what, limit, code) => {
    const error = configErrorOf(() => make({ limit, window: '1s' }));
    expect(error).toMatchObject({ code, field: `${name}.limit`, value: limit });
    expect(error.message).toContain(`${name}.limit`);
  });

  test.each([
    ['unparseable', 'soon'],
    ['zero', 0],
    ['negative', -1000],
    ['missing', undefined],
  ])('window %s', (_what, window) => {
    const error = configErrorOf(() => make({ limit: 5, window }));
    expect(error).toMatchObject({ field: `${name}.window`, value: window });
  });

  test('unknown option names are reported', () => {
    const error = configErrorOf(() => make({ limit: 5, window: '1s', bucket: 3 }));
    expect(error).toMatchObject({ code: 'FLOODGATE_UNKNOWN_OPTION', field: `${name}.bucket` });
  });

  test('a bad name is refused', () => {
    const error = configErrorOf(() => make({ limit: 5, window: '1s', name: 'a b' }));
    expect(error).toMatchObject({ field: `${name}.name`, value: 'a b' });
  });
});

describe('slidingWindow.buckets', () => {
  test.each([
    ['zero', 0],
    ['negative', -2],
    ['fractional', 2.5],
    ['a string', '10'],
    ['null', null],
  ])('%s is refused', (_what, buckets) => {
    const error = configErrorOf(() => slidingWindow({ limit: 5, window: '1s', buckets } as never));
    expect(error).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'slidingWindow.buckets',
      value: buckets,
    });
    expect(error.message).toContain('slidingWindow.buckets');
  });

  test.each([
    ['7 does not split 1 s into whole microseconds', '1s', 7],
    ['3 does not split 10 µs', '10us', 3],
    ['more sub-windows than microseconds', '5us', 10],
    ['the default 10 does not split 15 µs', '15us', undefined],
    ['more than the most sub-windows allowed', '1h', 1200],
  ])('%s', (_what, window, buckets) => {
    const error = configErrorOf(() =>
      slidingWindow({ limit: 5, window, ...(buckets === undefined ? {} : { buckets }) } as never),
    );
    expect(error).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'slidingWindow.buckets',
    });
    expect(error.message).toMatch(/slidingWindow\.buckets must be .*divides the window/);
  });

  test('valid buckets give sub-windows of window / buckets µs', () => {
    expect(slidingWindow({ limit: 5, window: '1s' }).params).toEqual([5, 100_000, 10]);
    expect(slidingWindow({ limit: 5, window: '12us', buckets: 3 }).params).toEqual([5, 4, 3]);
    expect(slidingWindow({ limit: 5, window: '1s', buckets: 1 }).params).toEqual([5, 1_000_000, 1]);
  });

  test('names and ids: the default bucket count is implied; another one is part of both', () => {
    const implied = slidingWindow({ limit: 5, window: '1m' });
    const explicit = slidingWindow({ limit: 5, window: '1m', buckets: 10 });
    const other = slidingWindow({ limit: 5, window: '1m', buckets: 6 });
    expect(implied.name).toBe('sliding-window-5-per-60s');
    expect(explicit.id).toBe(implied.id);
    expect(other.name).toBe('sliding-window-5-per-60s-buckets-6');
    expect(other.id).not.toBe(implied.id);
    expect(other.capacity).toBe(5);
  });
});

describe('leakyBucket.burst and leakyBucket.delay', () => {
  test.each([
    ['negative', -1],
    ['fractional', 1.5],
    ['a string', '2'],
  ])('burst %s is refused', (_what, burst) => {
    const error = configErrorOf(() => leakyBucket({ limit: 5, window: '1s', burst } as never));
    expect(error).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'leakyBucket.burst',
      value: burst,
    });
  });

  test('a burst whose excess would pass 2^53 units is refused', () => {
    // One request is 1000 days' worth of µs units here.
    const error = configErrorOf(() => leakyBucket({ limit: 1, window: '1000d', burst: 200 }));
    expect(error).toMatchObject({ field: 'leakyBucket.burst', value: 200 });
    expect(error.message).toContain('at most 103');
  });

  test.each([
    ['negative', -1],
    ['fractional', 0.5],
    ['a string', '3'],
    ['null', null],
  ])('delay %s is refused', (_what, delay) => {
    const error = configErrorOf(() => leakyBucket({ limit: 5, window: '1s', delay } as never));
    expect(error).toMatchObject({
      code: 'FLOODGATE_INVALID_OPTION',
      field: 'leakyBucket.delay',
      value: delay,
    });
    expect(error.message).toContain('leakyBucket.delay');
  });

  test('capacity is burst + 1; delay 0 is accepted (nginx default: delay every excess request)', () => {
    expect(leakyBucket({ limit: 5, window: '1s' }).capacity).toBe(1);
    const shaped = leakyBucket({ limit: 5, window: '1s', burst: 12, delay: 0 });
    expect(shaped.capacity).toBe(13);
    expect(shaped.name).toBe('leaky-bucket-5-per-1s-burst-12-delay-0');
    expect(shaped.options).toEqual({ limit: 5, window: 1000, burst: 12, delay: 0 });
  });

  test('nodelay and any delay >= burst behave alike, so they share params and id', () => {
    const nodelay = leakyBucket({ limit: 5, window: '1s', burst: 4 });
    const atBurst = leakyBucket({ limit: 5, window: '1s', burst: 4, delay: 4 });
    const above = leakyBucket({ limit: 5, window: '1s', burst: 4, delay: 9 });
    const shaping = leakyBucket({ limit: 5, window: '1s', burst: 4, delay: 3 });
    expect(nodelay.params).toEqual(atBurst.params);
    expect(above.id).toBe(nodelay.id);
    expect(shaping.id).not.toBe(nodelay.id);
    // The names still say what was asked for.
    expect(nodelay.name).toBe('leaky-bucket-5-per-1s-burst-4');
    expect(above.name).toBe('leaky-bucket-5-per-1s-burst-4-delay-9');
  });
});
