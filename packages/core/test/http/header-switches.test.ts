/**
 * The `headers` switches migrating users look for, through real servers on every adapter:
 * custom names for the legacy headers (koa-ratelimit's `headers`), and headers on admitted and
 * on denied responses switched separately (@fastify/rate-limit's `addHeadersOnExceeding` /
 * `addHeaders`).
 */
import { fixedWindow, memoryStore } from '@floodgate/core';
import { parseHeaderOptions } from '@floodgate/core/http';
import { configErrorOf, NEWEST_FRAMEWORKS, useTestApp } from '@floodgate/http-test-kit';
import request from 'supertest';

// Aligned to a minute plus 15 s: a 1 m window has 45 s left.
const WINDOW_START = 1_700_000_040_000;
const T0 = WINDOW_START + 15_000;

describe.each(NEWEST_FRAMEWORKS)('%s', (_framework, serve) => {
  const { start } = useTestApp(serve);
  const limiter = (headers: unknown) => ({
    store: memoryStore({ clock: () => T0 }),
    policies: fixedWindow({ limit: 1, window: '1m', name: 'per-minute' }),
    headers,
  });

  it('sends the legacy headers under the names given, the others under their defaults', async () => {
    const url = await start({
      limiters: [
        limiter({
          standard: false,
          legacy: { remaining: 'Rate-Limit-Remaining', limit: 'Rate-Limit-Total' },
        }),
      ],
    });
    const before = Date.now();
    const admitted = await request(url).get('/');
    expect(admitted.status).toBe(200);
    expect(admitted.headers['rate-limit-total']).toBe('1');
    expect(admitted.headers['rate-limit-remaining']).toBe('0');
    // Epoch seconds on the process clock: 45 s from when the request was answered.
    const reset = Number(admitted.headers['x-ratelimit-reset']);
    expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 45_000) / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil((Date.now() + 45_000) / 1000));
    expect(admitted.headers['x-ratelimit-remaining']).toBeUndefined();
    expect(admitted.headers['x-ratelimit-limit']).toBeUndefined();
    expect(admitted.headers.ratelimit).toBeUndefined();
    const denied = await request(url).get('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['rate-limit-remaining']).toBe('0');
    expect(denied.headers['retry-after']).toBe('45');
  });

  it('admitted: false sends headers only with a denial', async () => {
    const url = await start({ limiters: [limiter({ admitted: false, legacy: true })] });
    const admitted = await request(url).get('/');
    expect(admitted.status).toBe(200);
    expect(admitted.body.rateLimit).toMatchObject({ allowed: true, remaining: 0 });
    for (const name of ['ratelimit', 'ratelimit-policy', 'x-ratelimit-remaining', 'retry-after']) {
      expect(admitted.headers[name]).toBeUndefined();
    }
    const denied = await request(url).get('/');
    expect(denied.status).toBe(429);
    expect(denied.headers.ratelimit).toBe('"per-minute";r=0;t=45');
    expect(denied.headers['x-ratelimit-remaining']).toBe('0');
    expect(denied.headers['retry-after']).toBe('45');
  });

  it('denied: false sends a bare 429, headers only on admitted responses', async () => {
    const url = await start({ limiters: [limiter({ denied: false })] });
    const admitted = await request(url).get('/');
    expect(admitted.status).toBe(200);
    expect(admitted.headers.ratelimit).toBe('"per-minute";r=0;t=45');
    const denied = await request(url).get('/');
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toMatch(/^application\/problem\+json/);
    for (const name of ['ratelimit', 'ratelimit-policy', 'retry-after']) {
      expect(denied.headers[name]).toBeUndefined();
    }
  });
});

/** Asserts that `build` throws a RateLimitConfigError naming `field`. */
function expectConfigError(build: () => unknown, field: string): void {
  expect(configErrorOf(build).field).toBe(field);
}

describe('headers option validation', () => {
  it('names the field of a bad legacy name or switch', () => {
    expectConfigError(
      () => parseHeaderOptions({ legacy: { remaining: 'Bad Name' } }, 'rateLimit.headers'),
      'rateLimit.headers.legacy.remaining',
    );
    expectConfigError(
      () => parseHeaderOptions({ legacy: { total: 'X-Total' } }, 'rateLimit.headers'),
      'rateLimit.headers.legacy.total',
    );
    expectConfigError(
      () => parseHeaderOptions({ legacy: { limit: 'X-RateLimit-Reset' } }, 'rateLimit.headers'),
      'rateLimit.headers.legacy',
    );
    expectConfigError(
      () => parseHeaderOptions({ admitted: 'no' }, 'rateLimit.headers'),
      'rateLimit.headers.admitted',
    );
    expectConfigError(
      () => parseHeaderOptions({ denied: 0 }, 'rateLimit.headers'),
      'rateLimit.headers.denied',
    );
  });

  it('a names object turns the legacy group on; false turns every group off', () => {
    expect(parseHeaderOptions({ legacy: { reset: 'X-Reset' } }, 'h')).toMatchObject({
      legacy: true,
      legacyNames: { limit: 'X-RateLimit-Limit', reset: 'X-Reset' },
      admitted: true,
      denied: true,
    });
    expect(parseHeaderOptions(false, 'h')).toMatchObject({ standard: false, legacy: false });
  });
});
